/**
 * The database stopped and started again under traffic (single sends and batches), then credit
 * and messages reconciled exactly: every 200 has its stored messages, every stored message is
 * charged once, credit = initial - charged, and once the settler has run nothing is pending, no
 * charge is without messages and no message without its charge.
 */
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CLIENT_OPTIONS } from "../../src/store/database.ts";
import { post } from "../support/faulty-database.ts";
import { eventually } from "../support/fixtures.ts";
import { type RunningService, startService } from "../support/service.ts";
import { StoppableDatabase } from "../support/stoppable-database.ts";

const CREDIT = 100_000;

let database: StoppableDatabase;
let client: MongoClient;
let service: RunningService;

beforeAll(async () => {
  database = await StoppableDatabase.start();
  client = new MongoClient(database.uri, CLIENT_OPTIONS);
  await client.connect();
  const db = client.db("faults_restart");
  service = await startService(
    {
      SMS_REQUEST_TIMEOUT_MS: "1500",
      SMS_BATCH_STORE_TIMEOUT_MS: "2500",
      SMS_SETTLE_AFTER_MS: "5000",
      LOG_LEVEL: process.env.FAULTS_LOG_LEVEL ?? "silent",
    },
    {
      client,
      db,
      uri: database.uri,
      name: db.databaseName,
      kind: "emulator",
      close: async () => undefined,
    },
  );
}, 120_000);

afterAll(async () => {
  await service?.close();
  await client?.close();
  await database?.destroy();
});

interface Answer {
  kind: "single" | "batch";
  status: number;
  retryAfter: string | null;
  body: any;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends until `running()` is false; every answer (or failure to answer) is kept. */
async function traffic(
  kind: Answer["kind"],
  account: { apiKey: string; apiSecret: string },
  running: () => boolean,
  answers: Answer[],
): Promise<void> {
  for (let i = 0; running(); i++) {
    const body =
      kind === "single"
        ? { to: "+4915112345678", text: i % 3 === 0 ? "long ".repeat(40) : `single ${i}` }
        : {
            name: `b${i}`,
            messages: Array.from({ length: 20 }, (_, j) => ({
              to: `+49151${String(1_000_000 + j)}`,
              text: j % 5 === 0 ? "part ".repeat(40) : `batch ${i}.${j}`,
            })),
          };
    const url = `${service.baseUrl}/${kind === "single" ? "sms" : "sms-batch"}`;
    answers.push({ kind, ...(await post(url, body, account)) });
  }
}

it("reconciles credit and messages exactly after the database restarts under traffic", async () => {
  const account = await service.createAccount({ credit: CREDIT });
  const answers: Answer[] = [];
  let running = true;
  const senders = [
    ...Array.from({ length: 4 }, () => traffic("single", account, () => running, answers)),
    ...Array.from({ length: 2 }, () => traffic("batch", account, () => running, answers)),
  ];

  await eventually(async () => answers.filter((a) => a.status === 200).length >= 20, 30_000);
  await database.stop();
  await sleep(2_000);
  const whileDown = answers.length;
  await database.restart();
  // Traffic goes on until sends succeed again, and a little longer.
  const restarted = answers.length;
  await eventually(
    async () => answers.slice(restarted).filter((a) => a.status === 200).length >= 20,
    30_000,
  );
  running = false;
  await Promise.all(senders);

  // Every answer is a success or a 503 in the spec's shape; some of each.
  const refused = answers.filter((a) => a.status !== 200);
  expect(refused.length).toBeGreaterThan(0);
  expect(whileDown).toBeGreaterThan(0);
  for (const answer of refused) {
    expect(answer.status).toBe(503);
    expect(answer.retryAfter).not.toBeNull();
    expect(answer.body.errors.request).toEqual(
      answer.kind === "batch" ? expect.any(String) : [expect.any(String)],
    );
  }

  // The settler runs past its cutoff and leaves nothing pending.
  await eventually(async () => {
    const doc = await service.store.accounts.findOne({ _id: account.apiKey });
    return doc?.pendingCharges.length === 0;
  }, 40_000);

  const messages = await service.store.messages
    .find({ accountId: account.apiKey }, { projection: { _id: 1, batchId: 1, parts: 1 } })
    .toArray();
  const batches = await service.store.batches.find({ accountId: account.apiKey }).toArray();
  const stored = new Set(messages.map((m) => m._id));
  const perBatch = new Map<number, number>();
  for (const m of messages) {
    if (m.batchId !== undefined) perBatch.set(m.batchId, (perBatch.get(m.batchId) ?? 0) + 1);
  }

  // Every 200 has what it promised.
  for (const answer of answers.filter((a) => a.status === 200)) {
    if (answer.kind === "single") expect(stored.has(Number(answer.body.id))).toBe(true);
    else expect(perBatch.get(Number(answer.body.id))).toBe(answer.body.acceptedCount);
  }
  // No message of a batch that did not commit; every committed batch whole.
  const committed = new Map(batches.map((b) => [b._id, b.acceptedCount]));
  for (const [batchId, count] of perBatch) expect(committed.get(batchId)).toBe(count);
  for (const [batchId, count] of committed) expect(perBatch.get(batchId) ?? 0).toBe(count);

  // Every stored message charged once, nothing else: credit = initial - parts stored.
  const parts = messages.reduce((sum, m) => sum + m.parts, 0);
  const account_ = await service.store.accounts.findOne({ _id: account.apiKey });
  expect(account_?.creditMicros).toBe((CREDIT - parts) * 1_000_000);
}, 150_000);
