/**
 * Suspend, resume and close, on a whole service with its delivery worker and the simulator
 * (docs/design.md "Accounts, API keys and the operator console"): refusals in the design's shapes
 * with nothing stored or charged, accepted messages held and then released or withdrawn and
 * refunded once, a closed account final, and every change in the audit log with its author.
 */
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountStatus } from "../../gen/sms/admin/v1/admin_pb.ts";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { auditLogCollection } from "../../src/accounts/audit-log.ts";
import { CLOSED_ERROR, EXPIRED_WHILE_HELD_ERROR } from "../../src/accounts/held-messages.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { type Account, creditOf, senderNameRequest, storedFor } from "../rest/helpers.ts";
import { failureOf } from "../support/error-details.ts";
import { eventually, insertMessages, testMessage } from "../support/fixtures.ts";
import { ADMIN_TOKEN, postJson, type RunningService, startService } from "../support/service.ts";

let service: RunningService;
let inserted = 0;

beforeAll(async () => {
  service = await startService({
    SMS_RUN_WORKERS: "true",
    SMS_SIM_SEND_DELAY_MS: "10",
    SMS_SIM_RECEIPT_DELAY_MS: "50",
  });
});
afterAll(() => service?.close());

const operator = {
  headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "sms-operator": "alice" },
};
const send = (who: Account) =>
  postJson(`${service.baseUrl}/sms`, { to: "+15550100200", text: "hello", ...who });
const suspend = (who: Account, reason = "spam complaints") =>
  service.admin.suspendAccount({ apiKey: who.apiKey, reason }, operator);

/**
 * Messages accepted and charged as the intake would (1 unit a part), while the account is held:
 * the worker has not handed them over.
 */
async function acceptedWhileHeld(who: Account, count: number, ttl = 3600): Promise<number[]> {
  await service.store.accounts.updateOne(
    { _id: who.apiKey },
    { $inc: { creditMicros: -count * 1_000_000 } },
  );
  return insertMessages(
    service.store,
    // Ids far above the service's own sequence, which the sends of these tests use.
    Array.from({ length: count }, () =>
      testMessage(who.apiKey, "+15550100200", { ttl, id: 1_000_000_000 + ++inserted }),
    ),
  );
}

/** Waits until the worker has taken the account's lane's turn after `since`. */
async function laneVisited(who: Account, since: Date): Promise<void> {
  await eventually(async () => {
    const lane = await service.store.lanes.findOne({ _id: who.apiKey });
    const served = (lane as any)?.delivery?.servedAt as Date | undefined;
    return served !== undefined && served > since;
  }, 10_000);
}

const statusesOf = async (ids: number[]) =>
  (await service.store.messages.find({ _id: { $in: ids } }).toArray()).map((m) => m.status);

describe("a suspended account", () => {
  it("is refused sends, sender-name requests and new keys with its reason; reads still work", async () => {
    const account = await service.createAccount({ credit: 10 });
    const suspended = await suspend(account);
    expect(suspended.account).toMatchObject({
      status: AccountStatus.SUSPENDED,
      statusReason: "spam complaints",
    });
    const before = await storedFor(service, account.apiKey);
    const sent = await send(account);
    expect(sent).toEqual({
      status: 403,
      body: { errors: { request: ["this account is suspended: spam complaints"] } },
    });
    const batch = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      messages: [{ to: "+15550100200", text: "x" }],
    });
    expect(batch).toEqual({
      status: 403,
      body: { errors: { request: "this account is suspended: spam complaints" } },
    });
    const name = await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("Shop"),
      ...account,
    });
    expect(name.status).toBe(403);
    const key = await postJson(`${service.baseUrl}/api-keys`, { ...account, name: "k" });
    expect(key.status).toBe(403);
    const messaging = createClient(
      MessagingService,
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    );
    const auth = {
      headers: { authorization: basicAuthorization(account.apiKey, account.apiSecret) },
    };
    const refused = await messaging
      .sendMessage({ to: "+15550100200", text: "x" }, auth)
      .catch(failureOf);
    expect(refused).toMatchObject({ code: Code.PermissionDenied, reason: "ACCOUNT_SUSPENDED" });
    await expect(messaging.listMessages({}, auth)).resolves.toBeDefined();
    const read = await fetch(
      `${service.baseUrl}/account?${new URLSearchParams({ apiKey: account.apiKey, apiSecret: account.apiSecret })}`,
    );
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({
      status: "SUSPENDED",
      suspendReason: "spam complaints",
    });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it("holds accepted messages from the carrier, and releases them on resume", async () => {
    const account = await service.createAccount({ credit: 10 });
    await suspend(account);
    const since = new Date();
    const ids = await acceptedWhileHeld(account, 3);
    await laneVisited(account, since);
    expect(await statusesOf(ids)).toEqual(["ACCEPTED", "ACCEPTED", "ACCEPTED"]);
    const resumed = await service.admin.resumeAccount({ apiKey: account.apiKey }, operator);
    expect(resumed.account?.status).toBe(AccountStatus.ACTIVE);
    await eventually(async () => (await statusesOf(ids)).every((s) => s === "DELIVERED"));
    expect((await send(account)).status).toBe(200);
  });

  it("withdraws and refunds a held message once its ttl passed", async () => {
    const account = await service.createAccount({ credit: 10 });
    await suspend(account);
    const [id] = await acceptedWhileHeld(account, 1, 1);
    await eventually(async () => (await statusesOf([id as number]))[0] === "SEND_ERROR");
    const message = await service.store.messages.findOne({ _id: id as number });
    expect(message?.sendError).toBe(EXPIRED_WHILE_HELD_ERROR);
    await eventually(async () => (await creditOf(service, account.apiKey)) === 10);
  });
});

describe("a closed account", () => {
  it("has its held messages withdrawn and refunded once, every key revoked, and stays closed", async () => {
    const account = await service.createAccount({ credit: 10 });
    const other = await postJson(`${service.baseUrl}/api-keys`, {
      ...account,
      name: "second",
      scope: "send",
    });
    await suspend(account);
    const ids = await acceptedWhileHeld(account, 4);
    expect(await creditOf(service, account.apiKey)).toBe(6);
    const closed = await service.admin.closeAccount(
      { apiKey: account.apiKey, reason: "fraud" },
      operator,
    );
    expect(closed.account).toMatchObject({ status: AccountStatus.CLOSED, statusReason: "fraud" });
    expect(await statusesOf(ids)).toEqual(Array(4).fill("SEND_ERROR"));
    const sendErrors = await service.store.messages
      .find({ _id: { $in: ids } }, { projection: { sendError: 1 } })
      .toArray();
    expect(new Set(sendErrors.map((m) => m.sendError))).toEqual(new Set([CLOSED_ERROR]));
    await eventually(async () => (await creditOf(service, account.apiKey)) === 10);
    for (const who of [account, { apiKey: other.body.apiKey, apiSecret: other.body.apiSecret }]) {
      const refused = await send(who);
      expect(refused.status).toBe(401);
      expect(refused.body.errors.request[0]).toMatch(/revoked/);
    }
    const resumed = await service.admin
      .resumeAccount({ apiKey: account.apiKey }, operator)
      .catch(failureOf);
    expect(resumed).toMatchObject({ code: Code.FailedPrecondition, reason: "ACCOUNT_CLOSED" });
    const suspendedAgain = await suspend(account).catch(failureOf);
    expect(suspendedAgain).toMatchObject({ reason: "ACCOUNT_CLOSED" });
    // The refund stays once, whatever the worker's later turns (as after a crash mid-close).
    const since = new Date();
    await service.store.lanes.updateOne(
      { _id: account.apiKey },
      { $set: { "delivery.dueAt": since } },
    );
    await laneVisited(account, since);
    expect(await creditOf(service, account.apiKey)).toBe(10);
  });
});

describe("the audit log", () => {
  it("keeps every status change with its time, reason and author", async () => {
    const account = await service.createAccount();
    await suspend(account, "chargeback");
    await service.admin.resumeAccount({ apiKey: account.apiKey, reason: "paid" }, operator);
    const entries = await auditLogCollection(service.store.db)
      .find({ accountId: account.apiKey, action: /^account\.(suspend|resume)$/ })
      .sort({ at: 1 })
      .toArray();
    expect(entries.map((e) => [e.action, e.detail, e.author.operator])).toEqual([
      ["account.suspend", "chargeback", "alice"],
      ["account.resume", "paid", "alice"],
    ]);
    expect(entries[0]?.author.door).toBe("connect");
    expect(entries[0]?.author.address).toBe("127.0.0.1");
  });

  it("refuses a suspension without a reason, or of an unknown account, changing nothing", async () => {
    const account = await service.createAccount();
    const blank = await suspend(account, " ").catch(failureOf);
    expect(blank).toMatchObject({
      code: Code.InvalidArgument,
      fields: { reason: expect.any(String) },
    });
    const long = await suspend(account, "x".repeat(501)).catch(failureOf);
    expect(long).toMatchObject({ code: Code.InvalidArgument });
    const unknown = await suspend({ apiKey: "nope", apiSecret: "" }).catch(failureOf);
    expect(unknown).toMatchObject({ code: Code.NotFound, reason: "ACCOUNT_NOT_FOUND" });
    const sent = await send(account);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  });
});
