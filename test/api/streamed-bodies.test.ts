/**
 * Issue 25, item 2.1: memory per request stays within a small multiple of its body, and holding
 * a large body must not stall the main thread (its collector stopped the loop for 100-300 ms
 * with 90 MB of chunks held). A body over 1 MiB goes to its parsing worker chunk by chunk as it
 * arrives: the main thread's heap (V8's external memory, where the chunks are counted) does not
 * grow with it, on REST and on Connect, and an unfinished body's worker task ends with it.
 */
import http from "node:http";
import type { Socket } from "node:net";
import { getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, expect, it } from "vitest";
import { bodiesInWorkers } from "../../src/request-bodies/json-parse-pool.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { type RunningService, startService } from "../support/service.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

let service: RunningService;
let account: { apiKey: string; apiSecret: string };

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 1_000_000 });
});
afterAll(() => service?.close());

const MB = 1024 * 1024;
const DECLARED = 48 * MB;
const SENT = 40 * MB;

/** This thread's ArrayBuffer memory that its heap still holds, once garbage is collected. */
function heldExternalBytes(): number {
  gc();
  return getHeapStatistics().external_memory;
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/**
 * Sends SENT bytes of a DECLARED-byte JSON body (valid so far: one long string) and leaves it
 * open; resolves once the service's socket has read them all, with the main thread's external
 * memory then (garbage collected) against before.
 */
async function partialBodyHeld(path: string, headers: http.OutgoingHttpHeaders) {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => sockets.add(socket);
  service.app.server.on("connection", track);
  const prefix = '{"messages":[{"to":"+4915112345678","text":"x"}],"note":"';
  const body = Buffer.alloc(SENT, "a");
  body.write(prefix);
  const before = heldExternalBytes();
  const request = http.request(`${service.baseUrl}${path}`, {
    method: "POST",
    // A connection of its own (the global agent keeps the admin client's open): tracked above.
    agent: false,
    headers: { "content-type": "application/json", "content-length": DECLARED, ...headers },
  });
  request.on("error", () => {});
  try {
    request.write(body);
    await until(() => [...sockets].some((socket) => socket.bytesRead >= SENT));
    // The last chunk read is handed on in the same turn; one more for the messages posted.
    await new Promise((resolve) => setImmediate(resolve));
    // Read, not refused: no answer yet, and the body is with a worker.
    expect([...sockets].map((socket) => socket.bytesWritten)).toEqual([0]);
    expect(bodiesInWorkers()).toBe(1);
    return { added: heldExternalBytes() - before };
  } finally {
    service.app.server.off("connection", track);
    request.destroy();
    // The client went away: the worker drops the body and its task ends.
    await until(() => bodiesInWorkers() === 0);
  }
}

it("REST: 40 MB of an unfinished /sms-batch body are not held by the main thread", async () => {
  const { added } = await partialBodyHeld("/sms-batch", {});
  // What the main thread keeps of a large body: at most the 1 MiB it started with and a chunk.
  expect(added).toBeLessThan(4 * MB);
});

it("Connect: 40 MB of an unfinished SendBatch JSON body are not held by the main thread", async () => {
  const { added } = await partialBodyHeld("/sms.v1.MessagingService/SendBatch", {
    authorization: basicAuthorization(account.apiKey, account.apiSecret),
  });
  expect(added).toBeLessThan(4 * MB);
});

it("a large body streamed to its worker is parsed whole: the batch is accepted", async () => {
  const text = "y".repeat(150);
  const messages = Array.from({ length: 1000 }, () => ({ to: "+4915112345678", text }));
  const body = JSON.stringify({ ...account, messages, note: "z".repeat(3 * MB) });
  expect(body.length).toBeGreaterThan(3 * MB);
  const response = await fetch(`${service.baseUrl}/sms-batch`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  expect(response.status).toBe(200);
  expect(await response.json()).toMatchObject({ totalCount: 1000, acceptedCount: 1000 });
  expect(bodiesInWorkers()).toBe(0);
});
