/**
 * One webhook on the wire (docs/design.md "Status webhooks"): a status is `GET <url>?id=<id>&status=<STATUS>
 * [&batch_id=<id>]`, appended to the URL's own query, signed over its path and query; an inbound
 * message is a JSON `POST` to the inbound URL, signed over its body. Both with the Standard Webhooks
 * signature headers, over keep-alive agents whose DNS lookup refuses private addresses unless
 * allowed, and a timeout that covers the whole response.
 */
import http from "node:http";
import https from "node:https";
import type { Logger } from "../logger.ts";
import { AddressBlockedError, guardedLookup } from "./address-guard.ts";
import { cachePerKey } from "./per-key-cache.ts";
import { webhookHeaders } from "./signature.ts";

export interface AttemptResult {
  httpStatus: number;
  error?: string;
  durationMs: number;
  /** Not worth retrying (refused address). */
  permanent?: boolean;
}

export interface WebhookSenderOptions {
  logger: Logger;
  /** Per-request timeout (until the whole response is read). */
  timeoutMs: number;
  /** Sockets per origin at most; the dispatcher bounds the requests in flight anyway. */
  maxSockets: number;
  allowPrivate: boolean;
  userAgent: string;
}

/**
 * The callback without its fragment, ending in `?` or in its own query and `&`: parsed once per
 * callback (at most 10000 kept), not once per notification (a quarter of a webhook's own cost
 * when it was).
 */
const callbackBase = cachePerKey(10_000, (callback) => {
  const url = new URL(callback);
  const query = url.search.length > 1 ? `${url.search.slice(1)}&` : "";
  url.search = "";
  url.hash = "";
  return `${url.href}?${query}`;
});

/**
 * `<callback>?…&id=<id>&status=<STATUS>[&batch_id=<id>][&reason=<reason>][&client_ref=<ref>]`,
 * keeping the callback's own query; `reason` on DELIVERY_ERROR only, `client_ref` when the message
 * has one, each encoded as encodeURIComponent does (docs/design.md "Message reads, client
 * references, scheduled sends and cancel").
 */
export function notificationUrl(
  callback: string,
  messageId: number,
  status: string,
  batchId?: number,
  extra: { reason?: string | undefined; clientRef?: string | undefined } = {},
): URL {
  const batch = batchId === undefined ? "" : `&batch_id=${batchId}`;
  const reason = extra.reason ? `&reason=${encodeURIComponent(extra.reason)}` : "";
  const ref = extra.clientRef ? `&client_ref=${encodeURIComponent(extra.clientRef)}` : "";
  return new URL(
    `${callbackBase(callback)}id=${messageId}&status=${status}${batch}${reason}${ref}`,
  );
}

/**
 * The receiver a webhook goes to, for its concurrency bound: scheme, host, port and path (the
 * query, which carries the notification, is not part of it). Two paths on one host are two
 * receivers: one that hangs does not hold the other back.
 */
export function receiverKey(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/** Sends single webhook requests; never throws. */
export class WebhookSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly lookup: ReturnType<typeof guardedLookup>;

  constructor(private readonly options: WebhookSenderOptions) {
    const agentOptions = {
      keepAlive: true,
      maxSockets: options.maxSockets,
      maxFreeSockets: options.maxSockets,
    };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
    this.lookup = guardedLookup(options.allowPrivate);
  }

  /**
   * One signed GET, or with `body` a signed JSON POST (unsigned when the account has no usable
   * secret). `extraHeaders`: the trace's `traceparent` (and `tracestate`) when tracing is on.
   */
  attempt(
    url: URL,
    webhookId: string,
    secret: string | readonly string[] | undefined,
    extraHeaders?: Record<string, string>,
    body?: string,
  ): Promise<AttemptResult> {
    const { timeoutMs, userAgent, logger } = this.options;
    const started = Date.now();
    const headers: Record<string, string> = { ...extraHeaders, "user-agent": userAgent };
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    if (secret && secret.length > 0) {
      try {
        const signed = body ?? `${url.pathname}${url.search}`;
        Object.assign(headers, webhookHeaders(secret, webhookId, signed));
      } catch (error) {
        logger.warn({ err: error }, "notifier: cannot sign with the account's webhook secret");
      }
    }
    return new Promise<AttemptResult>((resolve) => {
      let settled = false;
      const finish = (result: Omit<AttemptResult, "durationMs">) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...result, durationMs: Date.now() - started });
      };
      const isHttps = url.protocol === "https:";
      const request = (isHttps ? https : http).request(
        url,
        {
          method: body === undefined ? "GET" : "POST",
          headers,
          agent: isHttps ? this.httpsAgent : this.httpAgent,
          lookup: this.lookup,
        },
        (response) => {
          const status = response.statusCode ?? 0;
          response.on("error", (error) => finish({ httpStatus: 0, error: describe(error) }));
          response.on("end", () => {
            finish(
              status >= 200 && status < 300
                ? { httpStatus: status }
                : { httpStatus: status, error: `HTTP ${status}` },
            );
          });
          response.resume();
        },
      );
      const timer = setTimeout(() => {
        request.destroy(new Error(`timeout after ${timeoutMs} ms`));
      }, timeoutMs);
      request.on("error", (error) => {
        finish({
          httpStatus: 0,
          error: describe(error),
          permanent: error instanceof AddressBlockedError,
        });
      });
      request.end(body);
    });
  }

  /** Closes the kept-alive sockets. */
  destroy(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** An error as one line, with its code when the message lacks it. */
export function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
