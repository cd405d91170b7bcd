// What the benchmark's figures share: the run's context, accounts, sends, batches, and the webhook
// receivers (plain node:http servers in the bench process, recording when each request arrives).

import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import autocannon from "autocannon";
import type { Collection, Filter, MongoClient } from "mongodb";
import type { MessageDoc } from "../src/store/documents.ts";
import { acceptedMessage } from "../src/store/messages.ts";

export const ADMIN_TOKEN = "bench-admin-token-0123456789";

export interface Figure {
  figure: string;
  value: number;
  unit: string;
  baseline?: number;
  baselineName?: string;
  ratio?: number;
  target: string;
  met: boolean;
  extra?: Record<string, number>;
}

/** What run.ts gives the figures defined in other modules. */
export interface BenchContext {
  quick: boolean;
  client: MongoClient;
  figures: Figure[];
  /** Whether `--only` selects one of these figure ids (or no `--only` was given). */
  runs(...ids: string[]): boolean;
  log(message: string): void;
  /** Drops the databases (and collects the emulator's heap). */
  dropDatabases(...names: string[]): Promise<void>;
  /**
   * Collects the emulator's heap (nothing on another database): before each timed side of a
   * paired figure, so that neither side pays the collection of the other's garbage.
   */
  collectDatabaseHeap(): Promise<void>;
  /** The emulator's heap in use and its maximum; undefined on another database. */
  databaseHeap(): Promise<{ usedBytes: number; maxBytes: number } | undefined>;
  /** The emulator process's CPU seconds so far; undefined on another database. */
  databaseCpuSeconds(): number | undefined;
  /** The service's environment on database `db`, with `extra` variables. */
  serviceEnv(db: string, extra?: Record<string, string>): Record<string, string>;
}

/** Statuses a message leaves once its carrier's receipt is applied. */
export const PENDING_RECEIPT: MessageDoc["status"][] = ["ACCEPTED", "SENT"];

/** A probe's `--name value` option from the command line; `fallback` when absent. */
export function optionValue(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** Polls `done` every 50 ms until it holds or `timeoutMs` ran out; returns whether it held. */
export async function waitUntil(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

export interface Account {
  apiKey: string;
  apiSecret: string;
}

async function admin(baseUrl: string, method: string, request: object, service = ADMIN_SERVICE) {
  const response = await fetch(`${baseUrl}/${service}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify(request),
  });
  const body = await response.json();
  if (response.status !== 200) throw new Error(`${method}: ${JSON.stringify(body)}`);
  return body;
}

const ADMIN_SERVICE = "sms.admin.v1.AdminService";
/** Where the code before issue 12 (a baseline of figure 10) served it, with credit in units. */
const ADMIN_SERVICE_BEFORE_ISSUE_12 = "sms.v1.AdminService";

export async function createAccount(
  baseUrl: string,
  statusUrl?: string,
  name = "bench",
): Promise<Account> {
  const current = await fetch(`${baseUrl}/${ADMIN_SERVICE}/CreateAccount`, { method: "POST" });
  const before12 = current.status === 404;
  const body = (await admin(
    baseUrl,
    "CreateAccount",
    before12
      ? { name, credit: 1e8, ...(statusUrl && { statusUrl }) }
      : { name, creditMicros: String(1e8 * 1e6), ...(statusUrl && { statusUrl }) },
    before12 ? ADMIN_SERVICE_BEFORE_ISSUE_12 : ADMIN_SERVICE,
  )) as { account: { apiKey: string }; apiSecret: string };
  return { apiKey: body.account.apiKey, apiSecret: body.apiSecret };
}

/** Requests sender name `name` with purpose OTP (REST) and approves it (AdminService). */
export async function approvedOtpSender(baseUrl: string, account: Account, name: string) {
  const response = await fetch(`${baseUrl}/sender_names`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      ...account,
      name,
      purpose: "OTP",
      ownerType: "COMPANY",
      owner: "Bench Ltd",
      exampleMsg: "Your code is 123456",
    }),
  });
  if (response.status !== 200) throw new Error(`POST /sender_names: ${await response.text()}`);
  await admin(baseUrl, "ApproveSenderName", { apiKey: account.apiKey, name });
}

/** A batch to consecutive German mobile numbers from `+49151` + `firstNumber` on. */
export function batchBody(
  account: object,
  count: number,
  text: string,
  statusCallback?: string,
  firstNumber = 10_000_000,
) {
  return JSON.stringify({
    ...account,
    name: "bench",
    ...(statusCallback && { statusCallback }),
    messages: Array.from({ length: count }, (_, i) => ({
      to: `+49151${String(firstNumber + i)}`,
      text,
    })),
  });
}

/**
 * The documents a batch of `count` one-part messages of `text` (to batchBody's numbers) is stored
 * as: what the driver baselines of figures 1, 2 and 15 write.
 */
export function equivalentDocs(firstId: number, count: number, text: string): MessageDoc[] {
  const now = new Date();
  return Array.from({ length: count }, (_, i) =>
    acceptedMessage(
      {
        id: firstId + i,
        accountId: "bench",
        batchId: 1,
        to: `+49151${10_000_000 + i}`,
        from: "SMSINFO",
        text,
        parts: 1,
        ttl: 21_600,
      },
      now,
    ),
  );
}

/**
 * The baseline of a batch figure stores the very documents the service stored for the same body
 * (every field it keeps: route, price, notifications, trace), read back once, under ids of their
 * own: `copies(firstId)` gives them from `firstId` on.
 */
export async function storedCopies(
  messages: Collection<MessageDoc>,
  batchId: number,
): Promise<(firstId: number) => MessageDoc[]> {
  const stored = await messages.find({ batchId }).sort({ _id: 1 }).toArray();
  if (stored.length === 0) throw new Error(`batch ${batchId} has no stored messages to copy`);
  return (firstId) => stored.map((doc, i) => ({ ...doc, _id: firstId + i }));
}

/** Figure 1's load (POST /sms, 1 part, 32 connections): requests per second from `account`. */
export async function sendRate(baseUrl: string, account: Account, seconds: number, figure: string) {
  const result = await autocannon({
    url: `${baseUrl}/sms`,
    method: "POST",
    connections: 32,
    duration: seconds,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ to: "+4915112345678", text: "Hello from the benchmark", ...account }),
  });
  if (result.non2xx > 0) {
    const codes = Object.entries(result.statusCodeStats ?? {})
      .filter(([code]) => !code.startsWith("2"))
      .map(([code, stat]) => `${stat.count} x ${code}`);
    throw new Error(`figure ${figure}: ${result.non2xx} sends were refused (${codes.join(", ")})`);
  }
  return result.requests.average;
}

/**
 * Measures two sides in `rounds` pairs, the side that goes first changing every round (counted
 * from round `from`, so that a later epoch goes on with the alternation); each side's values are
 * added to its array in `into`.
 */
export async function alternated<S extends string>(
  rounds: number,
  sides: readonly [S, S],
  measure: (side: S) => Promise<number>,
  into: Record<S, number[]>,
  from = 0,
): Promise<void> {
  const [a, b] = sides;
  for (let r = from; r < from + rounds; r++) {
    const aFirst = r % 2 === 0;
    if (aFirst) into[a].push(await measure(a));
    into[b].push(await measure(b));
    if (!aFirst) into[a].push(await measure(a));
  }
}

export async function postBatch(baseUrl: string, body: string, count = 10_000) {
  const started = performance.now();
  const response = await fetch(`${baseUrl}/sms-batch`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  const result = (await response.json()) as { id: number; acceptedCount: number };
  if (response.status !== 200 || result.acceptedCount !== count) {
    throw new Error(`batch failed: ${response.status} ${JSON.stringify(result).slice(0, 300)}`);
  }
  return { ms: performance.now() - started, id: result.id };
}

/** A single send that was accepted: its id, and when its 200 arrived (epoch ms). */
export interface Send {
  id: number;
  acceptedAt: number;
}

export async function sendSms(baseUrl: string, body: object): Promise<Send> {
  const response = await fetch(`${baseUrl}/sms`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  const acceptedAt = Date.now();
  if (response.status !== 200) throw new Error(`POST /sms: ${response.status} ${text}`);
  return { id: (JSON.parse(text) as { id: number }).id, acceptedAt };
}

/**
 * POSTs `body` to /sms every `intervalMs` (each send started on time, not after the previous
 * answer) until `stop()` holds or `maxMs` ran out; resolves with every send once all are answered.
 */
export async function pacedSends(
  baseUrl: string,
  body: object,
  intervalMs: number,
  stop: () => boolean,
  maxMs: number,
): Promise<Send[]> {
  const started = performance.now();
  const sends: Promise<Send>[] = [];
  for (let i = 0; !stop() && performance.now() - started < maxMs; i++) {
    sends.push(sendSms(baseUrl, body));
    await sleep(started + (i + 1) * intervalMs - performance.now());
  }
  return Promise.all(sends);
}

export interface Arrival {
  path: string;
  /** `${id}:${status}` of a status webhook; an inbound webhook's `webhook-id` (`inbound_<id>`). */
  key: string;
  /** Epoch ms of the request's arrival. */
  at: number;
}

export interface Receiver {
  url(path: string): string;
  /** Every request, in arrival order (duplicates included). */
  readonly arrivals: Arrival[];
  /** First arrival of each key (see `Arrival`). */
  readonly first: Map<string, number>;
  /** Arrivals that repeat a key already received. */
  duplicates(): number;
  close(): void;
}

/**
 * A webhook receiver on 127.0.0.1. `answerAfter(path)`: ms before its 200, or "never" (the request
 * stays open until the service gives up on it).
 */
export async function startReceiver(
  answerAfter: (path: string) => number | "never" = () => 0,
): Promise<Receiver> {
  const arrivals: Arrival[] = [];
  const first = new Map<string, number>();
  const server = createServer((req, res) => {
    const at = Date.now();
    const url = new URL(req.url ?? "/", "http://x");
    const key = url.searchParams.has("id")
      ? `${url.searchParams.get("id")}:${url.searchParams.get("status")}`
      : String(req.headers["webhook-id"]);
    arrivals.push({ path: url.pathname, key, at });
    if (!first.has(key)) first.set(key, at);
    const delay = answerAfter(url.pathname);
    if (delay === "never") return;
    if (delay <= 0) res.writeHead(200).end();
    else setTimeout(() => res.writeHead(200).end(), delay);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    arrivals,
    first,
    duplicates: () => arrivals.length - first.size,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

/**
 * Batch `batchId`'s messages whose status matches `status`, at most `limit`, read through the
 * batch index. The drain probes use this, not `countDocuments`: on the emulator that is an
 * aggregate that reads and copies every message under the collection's lock (128 ms for 10030
 * messages, against 11 ms for a `findOne` like this: bench notes, session (9)), and a probe every
 * 2 s held the service's own writes behind it.
 */
export async function batchMessagesIn(
  messages: Collection<MessageDoc>,
  batchId: number,
  status: Filter<MessageDoc>["status"],
  limit = 0,
): Promise<number> {
  const found = await messages
    .find({ batchId, status }, { projection: { _id: 1 }, limit })
    .toArray();
  return found.length;
}

/** When each status change of the messages matching `filter` happened: `${id}:${status}` -> epoch ms. */
export async function changeTimes(
  client: MongoClient,
  dbName: string,
  filter: Filter<MessageDoc> = {},
): Promise<Map<string, number>> {
  const changes = new Map<string, number>();
  const cursor = client
    .db(dbName)
    .collection<MessageDoc>("messages")
    .find(filter, { projection: { notifications: 1 } });
  for await (const doc of cursor)
    for (const n of doc.notifications) changes.set(`${doc._id}:${n.status}`, n.createdAt.getTime());
  return changes;
}
