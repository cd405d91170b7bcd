/**
 * A real HTTP receiver for webhooks on 127.0.0.1 (port chosen by the system). It records every
 * request (an inbound webhook's body too) and answers 200 with an empty body once the request is
 * read, unless told to fail the first N requests, to answer with a status chosen per request, or to
 * delay its answers.
 */
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  method: string;
  /** Path and query as received (what the signature covers). */
  pathAndQuery: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  /** The request's body as read (empty for a GET); complete once the request is answered. */
  body: string;
  /** Status the receiver answered (0 when the client went away first). */
  answered: number;
  at: number;
}

export interface WebhookReceiverOptions {
  /** Fail this many requests first (answered with `failStatus`). */
  failFirst?: number;
  failStatus?: number;
  /** Delay before answering, in ms. */
  delayMs?: number;
  /** Chooses the status of a request; undefined falls back to the rules above. */
  respond?: (request: Omit<ReceivedRequest, "answered">) => number | undefined;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  /** Every request received, in arrival order. */
  requests: ReceivedRequest[];
  /** The requests answered 2xx. */
  succeeded(): ReceivedRequest[];
  set(options: WebhookReceiverOptions): void;
  /** Resolves once `predicate` holds over the requests; rejects after `timeoutMs` (default 20 s). */
  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A `respond` that fails each webhook's first request with 500 and answers its retries 200, by
 * `webhook-id` (the same on every retry): each webhook shows a failed attempt and one that worked.
 */
export function failingOncePerWebhook(): NonNullable<WebhookReceiverOptions["respond"]> {
  const failedOnce = new Set<unknown>();
  return ({ headers }) => {
    if (failedOnce.has(headers["webhook-id"])) return 200;
    failedOnce.add(headers["webhook-id"]);
    return 500;
  };
}

export async function startWebhookReceiver(
  initial: WebhookReceiverOptions = {},
): Promise<WebhookReceiver> {
  let options = { ...initial };
  let failuresLeft = options.failFirst ?? 0;
  const requests: ReceivedRequest[] = [];
  const server = http.createServer((req, res) => {
    const pathAndQuery = req.url ?? "/";
    const parsed = new URL(pathAndQuery, "http://receiver.invalid");
    const record: ReceivedRequest = {
      method: req.method ?? "",
      pathAndQuery,
      path: parsed.pathname,
      query: Object.fromEntries(parsed.searchParams),
      headers: req.headers,
      body: "",
      answered: 0,
      at: Date.now(),
    };
    requests.push(record);
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      record.body += chunk;
    });
    req.on("end", () => {
      let status = options.respond?.(record);
      if (status === undefined) {
        if (failuresLeft > 0) {
          failuresLeft--;
          status = options.failStatus ?? 500;
        } else {
          status = 200;
        }
      }
      const answer = () => {
        if (res.destroyed) return;
        record.answered = status;
        res.writeHead(status, { "content-length": "0" });
        res.end();
      };
      if (options.delayMs) setTimeout(answer, options.delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    succeeded: () => requests.filter((r) => r.answered >= 200 && r.answered < 300),
    set(next) {
      options = { ...options, ...next };
      if (next.failFirst !== undefined) failuresLeft = next.failFirst;
    },
    async waitFor(predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(requests)) {
        if (Date.now() > deadline) {
          throw new Error(
            `webhook receiver: condition not met within ${timeoutMs} ms (${requests.length} requests)`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
