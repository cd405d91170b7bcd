import type { Db } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AccountDoc, BatchDoc, MessageDoc } from "../../src/store/documents.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { eventually } from "../support/fixtures.ts";
import { type ServiceProcess, startServiceProcess } from "../support/service-process.ts";
import { type Outcome, reconcile, Traffic } from "../support/traffic.ts";

// The service process killed with SIGKILL (no shutdown at all) while several clients send, then
// started again: once the settler has run, the books balance exactly. Every 200 answer has its
// messages; every stored message is charged once; every debit no message followed is refunded,
// and nothing of a batch that never committed is left.

// A short settler cutoff so the test need not wait two minutes; it must stay at least twice the
// request deadlines (config.ts), so those are shortened too. Production keeps its defaults.
const ENV = {
  SMS_SETTLE_AFTER_MS: "12000",
  SMS_REQUEST_TIMEOUT_MS: "5000",
  SMS_BATCH_STORE_TIMEOUT_MS: "6000",
  SMS_RATE_LIMIT_RPS: "0",
  // Delivery is not what is tested; its crash safety has tests of its own (test/delivery).
  SMS_RUN_WORKERS: "false",
};
const CREDIT = 1_000_000;
const BATCH_SIZE = 2000;

let database: TestDatabase;
let service: ServiceProcess | undefined;

beforeAll(async () => {
  database = await testDatabase({ label: "kill" });
});

afterEach(async () => {
  await service?.kill();
  service = undefined;
});

afterAll(async () => {
  await database?.close();
});

describe("kill -9 of the service under traffic", () => {
  it("mid-batch: a batch being stored is rolled back and refunded, every answered send is kept", async () => {
    const db = database.client.db(`${database.name}_batch`);
    const outcomes: Outcome[] = [];
    let account: { apiKey: string; apiSecret: string } | undefined;
    // Batches caught with messages stored but no document, which commits them after the last
    // message: with their writer dead, they never will commit.
    let caught: number[] = [];
    // The kill is timed by what a cheap read sees: a batch debited, with messages stored, and not
    // committed. A round whose batch committed between that read and the kill is simply one more
    // kill to reconcile; the bound only stops a test that could never catch one.
    for (let round = 1; caught.length === 0; round++) {
      expect(round, "rounds needed to kill the service mid-batch").toBeLessThanOrEqual(12);
      service = await startServiceProcess("source", db.databaseName, ENV);
      account ??= await service.createAccount(CREDIT);
      const apiKey = account.apiKey;
      const traffic = new Traffic(service.baseUrl, account).singles(4).batches(2, BATCH_SIZE);
      await eventually(
        async () =>
          traffic.answered("batch").length > 0 &&
          traffic.answered("sms").length >= 20 &&
          (await batchesBeingStored(db, apiKey)).length > 0,
        90_000,
      );
      await killAndStop(service, traffic);
      outcomes.push(...traffic.outcomes);
      expect(traffic.unanswered("batch").length, "batches in flight at the kill").toBeGreaterThan(
        0,
      );
      caught = await uncommittedBatchesWithMessages(db);
      if (caught.length > 0)
        console.log(`service kill: caught a batch mid-write in round ${round}`);
    }
    if (!account) throw new Error("no account");

    service = await startServiceProcess("source", db.databaseName, ENV);
    await settled(db, account.apiKey);
    const books = await reconcile(db, account.apiKey, CREDIT, outcomes);
    // What was stored of the caught batches is gone, and their debits came back (reconciled).
    expect(
      await db.collection<MessageDoc>("messages").countDocuments({ batchId: { $in: caught } }),
    ).toBe(0);
    const answered = outcomes.filter((o) => o.status === 200);
    expect(books.storedMessages).toBeGreaterThanOrEqual(
      answered.reduce((sum, o) => sum + (o.kind === "batch" ? o.body.acceptedCount : 1), 0),
    );
    await sendsAfterRestart(service, account, db, books.chargedParts);
  }, 240_000);

  it("mid-stream of single sends from eight clients: answered sends kept, the rest stored and charged or refunded", async () => {
    const db = database.client.db(`${database.name}_stream`);
    service = await startServiceProcess("source", db.databaseName, ENV);
    const account = await service.createAccount(CREDIT);
    // A loaded machine can find all eight clients between an answer and their next send, or
    // with their answers written but not yet read, and the kill would test nothing: then the
    // service is started again and killed again (at most three times), the books kept across.
    const outcomes: Outcome[] = [];
    const inFlightAtKills = () => outcomes.filter((o) => o.status === "no answer").length;
    for (let kill = 0; kill < 3 && inFlightAtKills() === 0; kill++) {
      if (kill > 0) service = await startServiceProcess("source", db.databaseName, ENV);
      const traffic = new Traffic(service.baseUrl, account).singles(8);
      await eventually(async () => traffic.answered("sms").length >= 300, 90_000);
      await eventually(async () => traffic.inFlight >= 6, 30_000);
      await killAndStop(service, traffic);
      outcomes.push(...traffic.outcomes);
    }
    expect(inFlightAtKills(), "sends in flight at a kill").toBeGreaterThan(0);

    service = await startServiceProcess("source", db.databaseName, ENV);
    await settled(db, account.apiKey);
    const books = await reconcile(db, account.apiKey, CREDIT, outcomes);
    // Sends in flight may have been stored (then charged) or not (then refunded): never more.
    const answered = outcomes.filter((o) => o.kind === "sms" && o.status === 200).length;
    expect(books.storedMessages).toBeGreaterThanOrEqual(answered);
    expect(books.storedMessages).toBeLessThanOrEqual(answered + inFlightAtKills());
    await sendsAfterRestart(service, account, db, books.chargedParts);
  }, 240_000);
});

async function killAndStop(victim: ServiceProcess, traffic: Traffic): Promise<void> {
  victim.signal("SIGKILL");
  const [exit] = await Promise.all([victim.exited, traffic.stop()]);
  expect(exit.signal).toBe("SIGKILL");
}

/** Waits until the restarted service's settler has left nothing pending for the account. */
async function settled(db: Db, apiKey: string): Promise<void> {
  await eventually(async () => {
    const account = await db.collection("accounts").findOne({ _id: apiKey as any });
    return (account?.pendingCharges ?? []).length === 0;
  }, 90_000);
}

/** Batches of the account debited (their charge pending), with messages stored, not committed. */
async function batchesBeingStored(db: Db, apiKey: string): Promise<number[]> {
  const account = await db
    .collection<AccountDoc>("accounts")
    .findOne({ _id: apiKey }, { projection: { pendingCharges: 1 } });
  const refs = (account?.pendingCharges ?? []).filter((c) => c.kind === "batch").map((c) => c.ref);
  if (refs.length === 0) return [];
  const committed = await db
    .collection<BatchDoc>("batches")
    .distinct("_id", { _id: { $in: refs } });
  const uncommitted = refs.filter((ref) => !committed.includes(ref));
  if (uncommitted.length === 0) return [];
  const withMessages = await db
    .collection<MessageDoc>("messages")
    .distinct("batchId", { batchId: { $in: uncommitted } });
  return withMessages.filter((id): id is number => typeof id === "number");
}

/** Batches with messages stored and no batch document (read once the writer is dead). */
async function uncommittedBatchesWithMessages(db: Db): Promise<number[]> {
  const committed = await db.collection<BatchDoc>("batches").distinct("_id");
  const batchIds = await db
    .collection<MessageDoc>("messages")
    .distinct("batchId", { batchId: { $exists: true, $nin: committed } });
  return batchIds.filter((id): id is number => typeof id === "number");
}

/** The restarted service takes sends again and charges them from the reconciled credit. */
async function sendsAfterRestart(
  restarted: ServiceProcess,
  account: { apiKey: string; apiSecret: string },
  db: Db,
  chargedParts: number,
): Promise<void> {
  const response = await fetch(`${restarted.baseUrl}/sms`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...account, to: "+4915199999999", text: "after the restart" }),
  });
  const body = (await response.json()) as any;
  expect(response.status, JSON.stringify(body)).toBe(200);
  expect(body.creditRemaining).toBe(CREDIT - chargedParts - 1);
  expect(await db.collection<MessageDoc>("messages").countDocuments({ _id: body.id })).toBe(1);
}
