import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { CLOSED_ERROR } from "../../src/accounts/held-messages.ts";
import { openStore, type Store } from "../../src/store/database.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { eventually, insertMessages, testMessage } from "../support/fixtures.ts";
import { ADMIN_TOKEN } from "../support/service.ts";
import { type ServiceProcess, startServiceProcess } from "../support/service-process.ts";

// The service process killed with SIGKILL (no shutdown at all) during a suspension and during a
// close (docs/design.md "Accounts, API keys and the operator console"), then started again: no
// held message is ever handed to the carrier, and every withdrawn message is refunded exactly
// once, the close finished by the new process's worker.

const ENV = {
  SMS_RUN_WORKERS: "true",
  SMS_SIM_SEND_DELAY_MS: "10",
  SMS_SIM_RECEIPT_DELAY_MS: "50",
  // A short settler cutoff so an interrupted refund is settled within the test; at least twice
  // the request deadlines (config.ts).
  SMS_SETTLE_AFTER_MS: "12000",
  SMS_REQUEST_TIMEOUT_MS: "5000",
  SMS_BATCH_STORE_TIMEOUT_MS: "6000",
};
const operator = {
  headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "sms-operator": "kill-test" },
};

let database: TestDatabase;
let service: ServiceProcess | undefined;
let inserted = 0;

beforeAll(async () => {
  database = await testDatabase({ label: "status_kill" });
});
afterEach(async () => {
  await service?.kill();
  service = undefined;
});
afterAll(async () => {
  await database?.close();
});

const adminOf = (running: ServiceProcess) =>
  createClient(
    AdminService,
    createConnectTransport({ baseUrl: running.baseUrl, httpVersion: "1.1" }),
  );

/** `count` messages accepted and charged (1 unit each) while the account is held. */
async function heldMessages(store: Store, accountId: string, count: number): Promise<number[]> {
  await store.accounts.updateOne(
    { _id: accountId },
    { $inc: { creditMicros: -count * 1_000_000 } },
  );
  return insertMessages(
    store,
    Array.from({ length: count }, (_, i) =>
      testMessage(accountId, `+1555010${String(i % 1000).padStart(4, "0")}`, {
        id: 2_000_000_000 + ++inserted,
      }),
    ),
  );
}

const handedOver = (store: Store, ids: number[]) =>
  store.messages.countDocuments({
    _id: { $in: ids },
    $or: [
      { status: { $in: ["SENT", "DELIVERED", "DELIVERY_ERROR"] } },
      { carrierIds: { $exists: true } },
    ],
  });

describe("kill -9 of the service", () => {
  it("during a suspension: nothing held is sent, before or after the restart; resume sends it all", async () => {
    const db = database.client.db(`${database.name}_suspend`);
    const store = openStore(db);
    service = await startServiceProcess("source", db.databaseName, ENV);
    const account = await service.createAccount(100);
    await adminOf(service).suspendAccount({ apiKey: account.apiKey, reason: "abuse" }, operator);
    const ids = await heldMessages(store, account.apiKey, 20);
    await service.kill();

    service = await startServiceProcess("source", db.databaseName, ENV);
    // The new process's worker has looked at the lane since its start, and held it.
    const since = new Date();
    await eventually(async () => {
      const lane = await store.lanes.findOne({ _id: account.apiKey });
      return (
        ((lane as any)?.delivery?.servedAt as Date | undefined) !== undefined &&
        (lane as any).delivery.servedAt > since
      );
    }, 30_000);
    expect(await handedOver(store, ids)).toBe(0);

    await adminOf(service).resumeAccount({ apiKey: account.apiKey }, operator);
    await eventually(
      async () =>
        (await store.messages.countDocuments({ _id: { $in: ids }, status: "DELIVERED" })) ===
        ids.length,
      30_000,
    );
  }, 120_000);

  it("during a close: every held message withdrawn and refunded exactly once, none sent", async () => {
    const db = database.client.db(`${database.name}_close`);
    const store = openStore(db);
    service = await startServiceProcess("source", db.databaseName, ENV);
    const account = await service.createAccount(5000);
    await adminOf(service).suspendAccount({ apiKey: account.apiKey, reason: "fraud" }, operator);
    const ids = await heldMessages(store, account.apiKey, 3000);
    // Killed as soon as the close has withdrawn something, with most of the queue still to go.
    const running = service;
    const closing = adminOf(running)
      .closeAccount({ apiKey: account.apiKey, reason: "fraud" }, operator)
      .catch(() => undefined);
    await eventually(async () => {
      const account_ = await store.accounts.findOne({ _id: account.apiKey });
      return account_?.status === "closed";
    }, 30_000);
    await running.kill();
    await closing;

    service = await startServiceProcess("source", db.databaseName, ENV);
    await eventually(
      async () =>
        (await store.messages.countDocuments({ _id: { $in: ids }, status: "ACCEPTED" })) === 0,
      60_000,
    );
    expect(await handedOver(store, ids)).toBe(0);
    const errors = await store.messages.distinct("sendError", { _id: { $in: ids } });
    expect(errors).toEqual([CLOSED_ERROR]);
    // Every refund settled, each message's once: the credit is back where it was.
    await eventually(async () => {
      const doc = await store.accounts.findOne({ _id: account.apiKey });
      return doc?.pendingCharges.length === 0;
    }, 60_000);
    const doc = await store.accounts.findOne({ _id: account.apiKey });
    expect(doc?.creditMicros).toBe(5000 * 1_000_000);
  }, 180_000);
});
