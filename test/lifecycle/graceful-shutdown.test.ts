import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AccountDoc, BatchDoc, MessageDoc } from "../../src/store/documents.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import {
  type ServiceCommand,
  type ServiceProcess,
  startServiceProcess,
} from "../support/service-process.ts";

// Issue 11: SIGTERM to the service as it is started (`npm start`: a tsc build, then node on
// dist/; or the sources under tsx's loader, `npm run dev`) lets the requests in flight finish,
// answers new ones 503 in the spec's shape, stops its background work and exits 0. Under
// `tsx src/main.ts` a 10000-message batch in flight got ECONNRESET.

const BATCH_SIZE = 10_000;
const CREDIT = 20_000;

let database: TestDatabase;

beforeAll(async () => {
  database = await testDatabase({ label: "shutdown" });
});

afterAll(async () => {
  await database?.close();
});

describe.each<ServiceCommand>(["npm start", "source"])("SIGTERM to the service (%s)", (command) => {
  let service: ServiceProcess;
  let dbName: string;

  beforeAll(async () => {
    // Each variant on its own database of the file's server.
    dbName = `${database.name}_${command === "npm start" ? "built" : "src"}`;
    // `npm start` compiles first: a clean build of src/ and gen/ on a loaded machine.
    service = await startServiceProcess(command, dbName, {}, 180_000);
  }, 200_000);

  afterAll(async () => {
    await service?.kill();
    await database.client.db(dbName).dropDatabase();
  });

  it("finishes a 10000-message batch in flight with 200, refuses new requests with 503, exits 0", async () => {
    const db = database.client.db(dbName);
    const account = await service.createAccount(CREDIT);

    // Two requests whose heads are half sent now, and completed once the service is closing.
    const lateBatch = await halfSentRequest(service.baseUrl, "/sms-batch");
    const lateSms = await halfSentRequest(service.baseUrl, "/sms");
    const lateRpc = await halfSentRequest(service.baseUrl, "/sms.v1.MessagingService/SendMessage");

    const received = service.logged(/"url":"\/sms-batch".*"msg":"incoming request"/);
    let answeredAt = 0;
    const batch = fetch(`${service.baseUrl}/sms-batch`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...account, messages: batchMessages() }),
    }).then(async (response) => {
      answeredAt = Date.now();
      return { status: response.status, body: (await response.json()) as any };
    });
    // Awaited below; a failure before then is reported there, not as unhandled.
    batch.catch(() => undefined);
    await received;
    const closing = service.logged(/new requests are answered 503/);
    const signalledAt = Date.now();
    service.signal("SIGTERM");
    await closing;

    const [batchRefusal, smsRefusal, rpcRefusal] = await Promise.all([
      lateBatch.complete(
        JSON.stringify({ ...account, messages: [{ to: "+4915112345678", text: "late" }] }),
      ),
      lateSms.complete(JSON.stringify({ ...account, to: "+4915112345678", text: "late" })),
      lateRpc.complete(JSON.stringify({ to: "+4915112345678", text: "late" })),
    ]);
    // The spec's error shape, a string on POST /sms-batch, and when to come back.
    expect(batchRefusal.status, batchRefusal.raw).toBe(503);
    expect(batchRefusal.headers["retry-after"]).toMatch(/^\d+$/);
    expect(JSON.parse(batchRefusal.body)).toEqual({ errors: { request: expect.any(String) } });
    expect(smsRefusal.status, smsRefusal.raw).toBe(503);
    expect(smsRefusal.headers["retry-after"]).toMatch(/^\d+$/);
    expect(JSON.parse(smsRefusal.body)).toEqual({
      errors: { request: [expect.any(String)] },
    });
    // Connect's error body on its paths, which its clients read as UNAVAILABLE.
    expect(rpcRefusal.status, rpcRefusal.raw).toBe(503);
    expect(JSON.parse(rpcRefusal.body)).toEqual({
      code: "unavailable",
      message: expect.any(String),
    });

    const answer = await batch;
    expect(answeredAt, "the batch was still in flight at SIGTERM").toBeGreaterThan(signalledAt);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.acceptedCount).toBe(BATCH_SIZE);

    const exit = await withinMs(service.exited, 60_000, () => service.output());
    expect(exit, service.output()).toEqual({ code: 0, signal: null });

    // Everything the answer promised is stored and charged once; nothing is left to settle.
    expect(await db.collection<BatchDoc>("batches").countDocuments({ _id: answer.body.id })).toBe(
      1,
    );
    expect(
      await db.collection<MessageDoc>("messages").countDocuments({ batchId: answer.body.id }),
    ).toBe(BATCH_SIZE);
    const stored = await db
      .collection<AccountDoc>("accounts")
      .findOne({ _id: account.apiKey }, { projection: { creditMicros: 1, pendingCharges: 1 } });
    expect(stored?.creditMicros).toBe((CREDIT - BATCH_SIZE) * 1_000_000);
    expect(stored?.pendingCharges ?? []).toEqual([]);
    // The late single send was refused before anything was charged or stored.
    expect(
      await db.collection<MessageDoc>("messages").countDocuments({ batchId: { $exists: false } }),
    ).toBe(0);
  }, 150_000);
});

function batchMessages() {
  return Array.from({ length: BATCH_SIZE }, (_, i) => ({
    to: `+49151${String(10_000_000 + i)}`,
    text: `Message ${i} of a batch in flight at SIGTERM`,
  }));
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  raw: string;
}

/**
 * A POST whose request head is half sent on its own connection: the server counts the connection
 * as busy, so closing does not drop it, and the request is routed only when `complete` sends the
 * rest.
 */
async function halfSentRequest(baseUrl: string, path: string) {
  const { hostname, port } = new URL(baseUrl);
  const socket: Socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    socket.once("close", () => resolve());
    socket.once("error", reject);
  });
  socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n`);
  return {
    async complete(body: string): Promise<RawResponse> {
      socket.write(
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await ended;
      const raw = Buffer.concat(chunks).toString("utf8");
      const [head = "", responseBody = ""] = raw.split("\r\n\r\n");
      const [statusLine = "", ...headerLines] = head.split("\r\n");
      const headers = Object.fromEntries(
        headerLines.map((line) => {
          const colon = line.indexOf(":");
          return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
        }),
      );
      return { status: Number(statusLine.split(" ")[1]), headers, body: responseBody, raw };
    },
  };
}

async function withinMs<T>(promise: Promise<T>, ms: number, describe: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`not within ${ms} ms:\n${describe()}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
