/**
 * A webhook receiver on 127.0.0.1 whose answers the test controls per path: at once (200), after a
 * delay, or held ("hanging") until `release()`. It counts the requests in flight per group (a key
 * chosen from the path, e.g. the account) and keeps the highest count seen, so tests can check
 * concurrency bounds where they matter: at the receiver.
 */
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface GatedRequest {
  path: string;
  id: string;
  status: string;
  webhookId: string;
  at: number;
  /** 0 while held or when the client went away first. */
  answered: number;
}

export type Behaviour = { hang: true } | { delayMs: number } | undefined;

export interface GatedReceiver {
  baseUrl: string;
  requests: GatedRequest[];
  /** Requests in flight now, and the most seen at once, per group. */
  inFlight(group: string): number;
  maxInFlight(group: string): number;
  /** Answers every held request (200) and stops holding new ones. */
  release(): void;
  close(): Promise<void>;
}

export async function startGatedReceiver(options: {
  behaviour: (path: string) => Behaviour;
  group?: (path: string) => string;
}): Promise<GatedReceiver> {
  const group = options.group ?? ((path: string) => path);
  const current = new Map<string, number>();
  const highest = new Map<string, number>();
  const held: (() => void)[] = [];
  let releasing = false;
  const requests: GatedRequest[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://receiver.invalid");
    const record: GatedRequest = {
      path: url.pathname,
      id: url.searchParams.get("id") ?? "",
      status: url.searchParams.get("status") ?? "",
      webhookId: String(req.headers["webhook-id"] ?? ""),
      at: Date.now(),
      answered: 0,
    };
    requests.push(record);
    const key = group(url.pathname);
    const now = (current.get(key) ?? 0) + 1;
    current.set(key, now);
    highest.set(key, Math.max(highest.get(key) ?? 0, now));
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      current.set(key, (current.get(key) ?? 1) - 1);
    };
    res.on("close", finish);
    const answer = () => {
      if (res.destroyed) return;
      record.answered = 200;
      res.writeHead(200, { "content-length": "0" });
      res.end();
    };
    const behaviour = options.behaviour(url.pathname);
    if (behaviour && "hang" in behaviour && !releasing) held.push(answer);
    else if (behaviour && "delayMs" in behaviour) setTimeout(answer, behaviour.delayMs);
    else answer();
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    inFlight: (key) => current.get(key) ?? 0,
    maxInFlight: (key) => highest.get(key) ?? 0,
    release() {
      releasing = true;
      for (const answer of held.splice(0)) answer();
    },
    async close() {
      releasing = true;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** How often each (message id, status) arrived. */
export function countsByNotification(requests: readonly GatedRequest[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of requests) {
    const key = `${r.id}:${r.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}
