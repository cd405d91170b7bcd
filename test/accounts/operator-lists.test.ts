/**
 * The operator's lists and key management in AdminService (docs/design.md "Accounts, API keys and
 * the operator console"): accounts filtered and paged, the approval queue across accounts oldest
 * first, a rejection's reason kept for the account, any account's keys, and hostile input refused.
 */
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountStatus } from "../../gen/sms/admin/v1/admin_pb.ts";
import { ApiKeyScope } from "../../gen/sms/v1/api_keys_pb.ts";
import {
  recentRejections,
  rejectionsCollection,
} from "../../src/accounts/sender-name-rejections.ts";
import { senderNameRequest } from "../rest/helpers.ts";
import { failureOf } from "../support/error-details.ts";
import { adminHeaders, postJson, type RunningService, startService } from "../support/service.ts";

let service: RunningService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

async function namedAccount(name: string) {
  const created = await service.admin.createAccount(
    { name, creditMicros: 5_000_000n },
    adminHeaders,
  );
  return { apiKey: created.account?.apiKey ?? "", apiSecret: created.apiSecret };
}

describe("ListAccounts", () => {
  it("filters by name prefix and status, pages without repeats, and counts the last day's messages", async () => {
    const prefix = `lst${Date.now()}`;
    const accounts = [];
    for (let i = 0; i < 5; i++) accounts.push(await namedAccount(`${prefix}-${i}`));
    const [busy, suspended] = accounts as [(typeof accounts)[0], (typeof accounts)[0]];
    for (let i = 0; i < 2; i++) {
      await postJson(`${service.baseUrl}/sms`, { ...busy, to: "+4915112345678", text: "x" });
    }
    await service.admin.suspendAccount({ apiKey: suspended.apiKey, reason: "abuse" }, adminHeaders);

    const seen: string[] = [];
    let pageToken = "";
    do {
      const page = await service.admin.listAccounts(
        { namePrefix: prefix, pageSize: 2, pageToken },
        adminHeaders,
      );
      expect(page.accounts.length).toBeLessThanOrEqual(2);
      seen.push(...page.accounts.map((a) => a.apiKey));
      pageToken = page.nextPageToken;
    } while (pageToken);
    expect(seen.sort()).toEqual(accounts.map((a) => a.apiKey).sort());

    const onlySuspended = await service.admin.listAccounts(
      { namePrefix: prefix, status: AccountStatus.SUSPENDED },
      adminHeaders,
    );
    expect(onlySuspended.accounts.map((a) => a.apiKey)).toEqual([suspended.apiKey]);
    const all = await service.admin.listAccounts(
      { namePrefix: prefix, pageSize: 10 },
      adminHeaders,
    );
    const summary = all.accounts.find((a) => a.apiKey === busy.apiKey);
    expect(summary).toMatchObject({ status: AccountStatus.ACTIVE, messagesLast24h: 2n });
    expect(summary?.lastSendTime).toBeDefined();
    expect(summary?.creditMicros).toBe(3_000_000n);
  });

  it("refuses a page token of other filters and an unknown status", async () => {
    const first = await service.admin.listAccounts({ pageSize: 1 }, adminHeaders);
    const other = await service.admin
      .listAccounts({ pageSize: 1, namePrefix: "x", pageToken: first.nextPageToken }, adminHeaders)
      .catch(failureOf);
    expect(other).toMatchObject({ code: Code.InvalidArgument, reason: "PAGE_TOKEN_INVALID" });
    const status = await service.admin
      .listAccounts({ status: 9 as AccountStatus }, adminHeaders)
      .catch(failureOf);
    expect(status).toMatchObject({
      code: Code.InvalidArgument,
      fields: { status: expect.any(String) },
    });
  });
});

describe("the approval queue", () => {
  it("lists pending names across accounts oldest first, with what the operator decides on", async () => {
    const first = await namedAccount("queue-a");
    const second = await namedAccount("queue-b");
    await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("QueueOne"),
      ...first,
    });
    await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("QueueTwo"),
      ...second,
    });
    await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("QueueDone"),
      ...second,
    });
    await service.admin.approveSenderName(
      { apiKey: second.apiKey, name: "QueueDone" },
      adminHeaders,
    );

    const queue = await service.admin.listSenderNames({ pending: true }, adminHeaders);
    const mine = queue.senderNames.filter((s) => [first.apiKey, second.apiKey].includes(s.apiKey));
    expect(mine.map((s) => [s.apiKey, s.senderName?.name])).toEqual([
      [first.apiKey, "QueueOne"],
      [second.apiKey, "QueueTwo"],
    ]);
    expect(mine[0]).toMatchObject({
      owner: "Example Ltd",
      exampleMsg: "Your parcel arrives today",
    });
    expect(mine[0]?.createTime).toBeDefined();
    const ofSecond = await service.admin.listSenderNames({ apiKey: second.apiKey }, adminHeaders);
    expect(ofSecond.senderNames.map((s) => s.senderName?.name).sort()).toEqual([
      "QueueDone",
      "QueueTwo",
    ]);
  });

  it("keeps a rejection's reason for the account, and refuses an oversize one", async () => {
    const account = await namedAccount("reject");
    await postJson(`${service.baseUrl}/sender_names`, { ...senderNameRequest("Bank"), ...account });
    const long = await service.admin
      .rejectSenderName(
        { apiKey: account.apiKey, name: "Bank", reason: "x".repeat(501) },
        adminHeaders,
      )
      .catch(failureOf);
    expect(long).toMatchObject({ code: Code.InvalidArgument });
    await service.admin.rejectSenderName(
      { apiKey: account.apiKey, name: "Bank", reason: "impersonates a bank" },
      adminHeaders,
    );
    const shown = await recentRejections(
      rejectionsCollection(service.store.db),
      account.apiKey,
      new Date(),
    );
    expect(shown.map((r) => [r.name, r.reason])).toEqual([["Bank", "impersonates a bank"]]);
  });
});

describe("any account's keys", () => {
  it("makes, lists and revokes a key of an account, the last full key included", async () => {
    const account = await namedAccount("keys");
    const made = await service.admin.createApiKey(
      { accountApiKey: account.apiKey, name: "ops", scope: ApiKeyScope.READ },
      adminHeaders,
    );
    expect(made.apiKey?.scope).toBe(ApiKeyScope.READ);
    const listed = await service.admin.listApiKeys({ accountApiKey: account.apiKey }, adminHeaders);
    expect(listed.apiKeys.map((k) => k.apiKey)).toEqual([account.apiKey, made.apiKey?.apiKey]);
    // The operator may take the last full key: the account is then locked out until given one.
    const revoked = await service.admin.revokeApiKey({ apiKey: account.apiKey }, adminHeaders);
    expect(revoked.apiKey?.apiKey).toBe(account.apiKey);
    const again = await service.admin
      .revokeApiKey({ apiKey: account.apiKey }, adminHeaders)
      .catch(failureOf);
    expect(again).toMatchObject({ code: Code.NotFound, reason: "API_KEY_NOT_FOUND" });
    const refused = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+4915112345678",
      text: "x",
    });
    expect(refused.status).toBe(401);
  });

  it("refuses an unknown account, an unknown scope and an expiry in the past", async () => {
    const account = await namedAccount("keys-bad");
    const unknown = await service.admin
      .createApiKey({ accountApiKey: "nobody", name: "k" }, adminHeaders)
      .catch(failureOf);
    expect(unknown).toMatchObject({ code: Code.NotFound, reason: "ACCOUNT_NOT_FOUND" });
    const scope = await service.admin
      .createApiKey(
        { accountApiKey: account.apiKey, name: "k", scope: 7 as ApiKeyScope },
        adminHeaders,
      )
      .catch(failureOf);
    expect(scope).toMatchObject({
      code: Code.InvalidArgument,
      fields: { scope: expect.any(String) },
    });
    const past = await service.admin
      .createApiKey(
        {
          accountApiKey: account.apiKey,
          name: "k",
          expireTime: { seconds: 1n, nanos: 0 } as never,
        },
        adminHeaders,
      )
      .catch(failureOf);
    expect(past).toMatchObject({
      code: Code.InvalidArgument,
      fields: { expire_time: expect.any(String) },
    });
    const listed = await service.admin.listApiKeys({ accountApiKey: account.apiKey }, adminHeaders);
    expect(listed.apiKeys).toHaveLength(1);
  });
});
