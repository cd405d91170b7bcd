import type { Db } from "mongodb";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AccountDoc, MessageDoc } from "../../src/store/documents.ts";
import type { LedgerEntryDoc } from "../../src/store/ledger.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { eventually } from "../support/fixtures.ts";
import { ADMIN_TOKEN } from "../support/service.ts";
import { type ServiceProcess, startServiceProcess } from "../support/service-process.ts";
import { Traffic } from "../support/traffic.ts";

// The ledger's rule under kill -9 (docs/design.md "Money", "Ledger"): the service process killed
// with SIGKILL while clients send single messages and batches, a third of them refused by the
// carrier (refunds under way), and the operator adds credit; once restarted and settled, credit
// at creation plus the sum of the entries is the credit, and every message is charged once and
// refunded at most once.

const ENV = {
  SMS_SETTLE_AFTER_MS: "12000",
  SMS_REQUEST_TIMEOUT_MS: "5000",
  SMS_BATCH_STORE_TIMEOUT_MS: "6000",
  SMS_RATE_LIMIT_RPS: "0",
  SMS_RUN_WORKERS: "true",
  SMS_SIM_SEND_DELAY_MS: "0",
  SMS_SIM_RECEIPT_DELAY_MS: "0",
};
const CREDIT = 1_000_000;

let database: TestDatabase;
let service: ServiceProcess | undefined;

beforeAll(async () => {
  database = await testDatabase({ label: "ledger-kill" });
});
afterEach(async () => {
  await service?.kill();
  service = undefined;
});
afterAll(async () => {
  await database?.close();
});

/** Every third destination is refused by the simulated carrier (+999…1: SEND_ERROR). */
const number = (n: number) =>
  n % 3 === 0 ? `+999${String(1_000_000 + n)}1` : `+49151${String(10_000_000 + n)}`;

async function addCredits(baseUrl: string, apiKey: string, stop: { done: boolean }) {
  while (!stop.done) {
    try {
      await fetch(`${baseUrl}/sms.admin.v1.AdminService/AddCredit`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ apiKey, amountMicros: "7000000" }),
      });
    } catch {
      return;
    }
  }
}

describe("kill -9 under sends, batches, refunds and credits", () => {
  it("the ledger balances once settled: credit at creation + entries = credit, nothing charged or refunded twice", async () => {
    const db = database.client.db(`${database.name}_ledger`);
    service = await startServiceProcess("source", db.databaseName, ENV);
    const account = await service.createAccount(CREDIT);
    for (let kill = 0; kill < 2; kill++) {
      if (kill > 0) service = await startServiceProcess("source", db.databaseName, ENV);
      const running = service;
      if (!running) throw new Error("no service");
      const traffic = new Traffic(running.baseUrl, account, number).singles(4).batches(1, 300);
      const stop = { done: false };
      const credits = addCredits(running.baseUrl, account.apiKey, stop);
      // Killed with refunds of the carrier's refusals under way, and sends in flight.
      await eventually(async () => {
        const refunds = await db.collection("ledger").countDocuments({ kind: "REFUND" });
        return traffic.answered("sms").length >= 60 && refunds > 0 && traffic.inFlight > 0;
      }, 90_000);
      running.signal("SIGKILL");
      stop.done = true;
      await Promise.all([running.exited, traffic.stop(), credits]);
      service = undefined;
    }

    service = await startServiceProcess("source", db.databaseName, ENV);
    // Read in the order money flows (queued, then marked for a refund, then a pending record), so
    // a message that leaves one stage between two reads is seen at the next: read the other way,
    // a send refused after the marks were counted and before the queue was passes as settled.
    await eventually(async () => {
      const queued = await db
        .collection<MessageDoc>("messages")
        .countDocuments({ status: "ACCEPTED", accountId: account.apiKey });
      const due = await db.collection<MessageDoc>("messages").countDocuments({ refundDue: true });
      const doc = await db.collection<AccountDoc>("accounts").findOne({ _id: account.apiKey });
      return queued === 0 && due === 0 && (doc?.pendingCharges ?? []).length === 0;
    }, 120_000);
    await books(db, account.apiKey);
  }, 300_000);
});

async function books(db: Db, apiKey: string): Promise<void> {
  const account = await db.collection<AccountDoc>("accounts").findOne({ _id: apiKey });
  const entries = await db
    .collection<LedgerEntryDoc>("ledger")
    .find({ accountId: apiKey })
    .toArray();
  const sum = entries.reduce((s, e) => s + e.amountMicros, 0);
  expect(account?.creditMicros, "credit at creation + entries").toBe(
    (account?.initialCreditMicros ?? 0) + sum,
  );
  const messages = await db
    .collection<MessageDoc>("messages")
    .find({ accountId: apiKey })
    .toArray();
  const batches = new Set(entries.map((e) => e.batchId).filter((id) => id !== undefined));
  const charged = new Map<number, number>();
  const refunded = new Map<number, number>();
  for (const e of entries) {
    const into = e.kind === "REFUND" ? refunded : charged;
    for (const id of e.messageIds ?? []) into.set(id, (into.get(id) ?? 0) + 1);
  }
  for (const m of messages) {
    const times =
      (charged.get(m._id) ?? 0) + (m.batchId !== undefined && batches.has(m.batchId) ? 1 : 0);
    expect(times, `message ${m._id} charged once`).toBe(1);
    const refunds = refunded.get(m._id) ?? 0;
    // What no carrier took is refunded exactly once; the rest never.
    expect(refunds, `message ${m._id} (${m.status}) refunds`).toBe(
      m.status === "SEND_ERROR" ? 1 : 0,
    );
  }
  expect(messages.some((m) => m.status === "SEND_ERROR")).toBe(true);
}
