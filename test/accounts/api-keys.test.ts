/**
 * API keys over real HTTP, Connect, gRPC and gRPC-Web (docs/design.md "Accounts, API keys and the operator
 * console"): made with their secret shown once, listed without it, scoped on every door,
 * revoked and expired on every instance within 5 s, and the first key working throughout.
 */

import { Code, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import { apiKeysCollection } from "../../src/accounts/api-keys.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { type Account, senderNameRequest, storedFor, withQuery } from "../rest/helpers.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { failureOf } from "../support/error-details.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";

let service: RunningService;
let other: RunningService;
let database: TestDatabase;

beforeAll(async () => {
  database = await testDatabase();
  // Two instances on one database; failed sign-ins limited low to see revoked keys not counted.
  service = await startService({ SMS_AUTH_FAILURES_PER_MIN: "3" }, database);
  other = await startService({ SMS_AUTH_FAILURES_PER_MIN: "3" }, database);
});
afterAll(async () => {
  await service?.close();
  await other?.close();
  await database?.close();
});

const keysUrl = () => `${service.baseUrl}/api-keys`;
const makeKey = (who: Account, fields: Record<string, unknown>, on = service) =>
  postJson(`${on.baseUrl}/api-keys`, { ...who, ...fields });
const listKeys = (who: Account) => withQuery("GET", keysUrl(), { ...who });
const deleteKey = (who: Account, key: string) =>
  withQuery("DELETE", `${keysUrl()}/${encodeURIComponent(key)}`, { ...who });
const send = (who: Account, on = service) =>
  postJson(`${on.baseUrl}/sms`, { to: "+4915112345678", text: "hello", ...who });

async function keyOf(who: Account, scope: string, name = `${scope} key`): Promise<Account> {
  const made = await makeKey(who, { name, scope });
  expect(made.status).toBe(200);
  return { apiKey: made.body.apiKey, apiSecret: made.body.apiSecret };
}

describe("making and listing keys", () => {
  it("answers the secret once, with Cache-Control: no-store, and keeps only its digest", async () => {
    const account = await service.createAccount();
    const response = await fetch(keysUrl(), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...account, name: "CI", scope: "read" }),
    });
    const made = (await response.json()) as any;
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(made).toMatchObject({ name: "CI", scope: "read" });
    expect(made.apiSecret).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    expect(Date.parse(made.createTime)).not.toBeNaN();
    const stored = await apiKeysCollection(service.store.db).findOne({ _id: made.apiKey });
    expect(stored?.secretHash).toMatch(/^sha256\$/);
    expect(JSON.stringify(stored)).not.toContain(made.apiSecret);

    const listed = await listKeys(account);
    expect(listed.status).toBe(200);
    // The first key is listed too, and no secret of any key.
    expect(listed.body.apiKeys.map((k: any) => [k.apiKey, k.scope])).toEqual([
      [account.apiKey, "full"],
      [made.apiKey, "read"],
    ]);
    expect(JSON.stringify(listed.body)).not.toMatch(/secret/i);
  });

  it("keeps the first key working beside new keys, and the account's id in what they send", async () => {
    const account = await service.createAccount();
    const sender = await keyOf(account, "send");
    expect((await send(sender)).status).toBe(200);
    expect((await send(account)).status).toBe(200);
    expect((await storedFor(service, account.apiKey)).messages).toBe(2);
  });

  it("shows when a key was last used, written beside the request, not in its way", async () => {
    const account = await service.createAccount();
    const sender = await keyOf(account, "send");
    const before = (await listKeys(account)).body.apiKeys.find(
      (k: any) => k.apiKey === sender.apiKey,
    );
    expect(before.lastUseTime).toBeUndefined();
    expect((await send(sender)).status).toBe(200);
    await vi.waitFor(async () => {
      const listed = (await listKeys(account)).body.apiKeys;
      const used = listed.find((k: any) => k.apiKey === sender.apiKey);
      expect(Date.parse(used.lastUseTime)).not.toBeNaN();
    });
  });

  it("shows when the first key was last used, though the account's keys were never managed", async () => {
    const account = await service.createAccount();
    expect((await send(account)).status).toBe(200);
    // Written beside the send; the list made after it is a use of the same minute, not written.
    await vi.waitFor(async () => {
      const stored = await apiKeysCollection(service.store.db).findOne({ _id: account.apiKey });
      expect(stored?.lastUsedAt).toBeInstanceOf(Date);
    });
    const first = (await listKeys(account)).body.apiKeys.find(
      (k: any) => k.apiKey === account.apiKey,
    );
    expect(first).toMatchObject({ name: "first key", scope: "full" });
    expect(Date.parse(first.lastUseTime)).not.toBeNaN();
  });

  it("refuses hostile input with a 400 naming the field, and makes nothing", async () => {
    const account = await service.createAccount();
    const cases: [Record<string, unknown>, string][] = [
      [{ name: "x".repeat(101) }, "name"],
      [{ name: "" }, "name"],
      [{ name: "k", scope: "admin" }, "scope"],
      [{ name: "k", expireTime: "2001-01-01T00:00:00Z" }, "expireTime"],
      [{ name: "k", expireTime: "tomorrow" }, "expireTime"],
    ];
    for (const [fields, field] of cases) {
      const refused = await makeKey(account, fields);
      expect(refused.status, JSON.stringify(fields)).toBe(400);
      expect(Object.keys(refused.body.errors)).toEqual([field]);
    }
    expect((await listKeys(account)).body.apiKeys).toHaveLength(1);
  });

  it("never makes a 21st key, however many requests race", async () => {
    const account = await service.createAccount();
    const answers = await Promise.all(
      Array.from({ length: 25 }, (_, i) => makeKey(account, { name: `k${i}`, scope: "read" })),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    expect(statuses.filter((s) => s === 409)).toHaveLength(6);
    expect((await listKeys(account)).body.apiKeys).toHaveLength(20);
  });
  it("does not count expired keys toward the 20, and racing creations still never make a 21st live one", async () => {
    const account = await service.createAccount();
    const expireTime = new Date(Date.now() + 3000).toISOString();
    const made = await Promise.all(
      Array.from({ length: 19 }, (_, i) =>
        makeKey(account, { name: `k${i}`, scope: "read", ...(i < 2 && { expireTime }) }),
      ),
    );
    expect(made.map((m) => m.status)).toEqual(Array(19).fill(200));
    expect((await makeKey(account, { name: "over", scope: "read" })).status).toBe(409);
    await new Promise((resolve) => setTimeout(resolve, 3100));
    // Two places came free by expiry; eight creations race for them.
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => makeKey(account, { name: `late${i}`, scope: "read" })),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(2);
    expect(statuses.filter((s) => s === 409)).toHaveLength(6);
    // The expired keys are still listed, with their expireTime; 20 are live.
    const listed = (await listKeys(account)).body.apiKeys;
    expect(listed).toHaveLength(22);
    const live = listed.filter((k: any) => !k.expireTime || Date.parse(k.expireTime) > Date.now());
    expect(live).toHaveLength(20);
    // Deleting an expired key gives no place back: it had already given it.
    const expired = listed.find((k: any) => k.expireTime) as { apiKey: string };
    expect((await deleteKey(account, expired.apiKey)).status).toBe(200);
    expect((await makeKey(account, { name: "still over", scope: "read" })).status).toBe(409);
    // Deleting a live key gives one.
    const late = listed.find((k: any) => k.name.startsWith("late")) as { apiKey: string };
    expect((await deleteKey(account, late.apiKey)).status).toBe(200);
    expect((await makeKey(account, { name: "in again", scope: "read" })).status).toBe(200);
    const stored = await service.store.accounts.findOne({ _id: account.apiKey });
    expect(stored?.keyCount).toBe(20);
  });
});

describe("deleting keys", () => {
  it("refuses the key the request is made with, and the last full key (409 on apiKey)", async () => {
    const account = await service.createAccount();
    const own = await deleteKey(account, account.apiKey);
    expect(own.status).toBe(409);
    expect(own.body.errors.apiKey[0]).toMatch(/key it is made with/);
    const second = await keyOf(account, "full");
    // Two full keys deleting each other at once: one of them stays. The other request is refused
    // as deleting the last full key (409), or, when the first delete ended before it was
    // authenticated, as made with a key that is gone (401).
    const [a, b] = await Promise.all([
      deleteKey(second, account.apiKey),
      deleteKey(account, second.apiKey),
    ]);
    const [won, lost] = [a.status, b.status].sort();
    expect(won).toBe(200);
    expect([401, 409]).toContain(lost);
    const left = (await listKeys(a.status === 200 ? second : account)).body.apiKeys;
    expect(left.filter((k: any) => k.scope === "full")).toHaveLength(1);
  });

  it("answers another account's key id as not found, and leaves it working", async () => {
    const mine = await service.createAccount();
    const theirs = await service.createAccount();
    const theirKey = await keyOf(theirs, "send");
    const refused = await deleteKey(mine, theirKey.apiKey);
    expect(refused.status).toBe(404);
    expect(Object.keys(refused.body.errors)).toEqual(["apiKey"]);
    expect((await send(theirKey)).status).toBe(200);
  });

  it("refuses a revoked key on another instance within 5 s, as revoked, and never locks out its address", async () => {
    const account = await service.createAccount();
    const fleet = await keyOf(account, "send");
    // The other instance has the key in its cache.
    expect((await send(fleet, other)).status).toBe(200);
    expect((await deleteKey(account, fleet.apiKey)).status).toBe(200);
    await vi.waitFor(
      async () => {
        const refused = await send(fleet, other);
        expect(refused.status).toBe(401);
        expect(refused.body.errors.request[0]).toMatch(/revoked/);
      },
      { timeout: 5000, interval: 200 },
    );
    // More refusals than the address's allowance of failed sign-ins: still 401, never 429.
    for (let i = 0; i < 5; i++) expect((await send(fleet, other)).status).toBe(401);
    expect((await send(account, other)).status).toBe(200);
    const listed = (await listKeys(account)).body.apiKeys.map((k: any) => k.apiKey);
    expect(listed).not.toContain(fleet.apiKey);
  });

  it("refuses a key past its expireTime, as expired", async () => {
    const account = await service.createAccount();
    const made = await makeKey(account, {
      name: "short",
      scope: "send",
      expireTime: new Date(Date.now() + 3000).toISOString(),
    });
    const key = { apiKey: made.body.apiKey, apiSecret: made.body.apiSecret };
    await vi.waitFor(
      async () => {
        const refused = await send(key);
        expect(refused.status).toBe(401);
        expect(refused.body.errors.request[0]).toMatch(/expired/);
      },
      { timeout: 5000, interval: 200 },
    );
  });
});

describe("scopes on every door", () => {
  let session: Http2SessionManager;
  beforeAll(() => {
    session = new Http2SessionManager(service.grpcUrl);
  });
  afterAll(() => session?.abort());

  const auth = (who: Account) => ({
    headers: { authorization: basicAuthorization(who.apiKey, who.apiSecret) },
  });

  it("REST: a read key reads but neither sends nor asks for names; 403 on request, nothing stored or charged", async () => {
    const account = await service.createAccount({ credit: 10 });
    const reader = await keyOf(account, "read");
    const before = await storedFor(service, account.apiKey);
    const sent = await send(reader);
    expect(sent.status).toBe(403);
    expect(sent.body.errors.request[0]).toMatch(/scope \(read\)/);
    const batch = await postJson(`${service.baseUrl}/sms-batch`, {
      ...reader,
      messages: [{ to: "+4915112345678", text: "x" }],
    });
    expect(batch.status).toBe(403);
    expect(typeof batch.body.errors.request).toBe("string");
    const name = await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("Shop"),
      ...reader,
    });
    expect(name.status).toBe(403);
    expect((await withQuery("GET", `${service.baseUrl}/sender_names`, { ...reader })).status).toBe(
      200,
    );
    expect((await listKeys(reader)).status).toBe(403);
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it("REST: a send key sends and adds opt-outs, but manages neither names nor keys", async () => {
    const account = await service.createAccount();
    const sender = await keyOf(account, "send");
    expect((await send(sender)).status).toBe(200);
    const name = await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("Shop"),
      ...sender,
    });
    expect(name.status).toBe(403);
    expect((await makeKey(sender, { name: "mine" })).status).toBe(403);
  });

  it("Connect, gRPC and gRPC-Web: PERMISSION_DENIED with reason API_KEY_SCOPE, before the Idempotency-Key", async () => {
    const account = await service.createAccount();
    const reader = await keyOf(account, "read");
    for (const transport of [
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
      createGrpcTransport({ baseUrl: service.grpcUrl, sessionManager: session }),
      createGrpcWebTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    ]) {
      const messaging = createClient(MessagingService, transport);
      const names = createClient(SenderNameService, transport);
      const refused = await messaging
        .sendMessage(
          { to: "+4915112345678", text: "x" },
          { headers: { ...auth(reader).headers, "idempotency-key": "k1" } },
        )
        .catch(failureOf);
      expect(refused).toMatchObject({ code: Code.PermissionDenied, reason: "API_KEY_SCOPE" });
      await expect(names.listSenderNames({}, auth(reader))).resolves.toBeDefined();
    }
    expect((await storedFor(service, account.apiKey)).messages).toBe(0);
    // The key was not taken: a full key may use it now.
    const messaging = createClient(
      MessagingService,
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    );
    await messaging.sendMessage(
      { to: "+4915112345678", text: "x" },
      { headers: { ...auth(account).headers, "idempotency-key": "k1" } },
    );
  });
});
