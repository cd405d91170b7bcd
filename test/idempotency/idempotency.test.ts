/**
 * Idempotency keys (issue 11, defect 13; docs/design.md "Idempotency and rate limits"): a client that
 * retries a POST /sms, /sms-batch or /sender_names (SendMessage, SendBatch, CreateSenderName)
 * with the same Idempotency-Key gets the first answer again, marked `Idempotent-Replayed: true`,
 * and nothing is stored or charged twice; the same key while the first still runs is 409, with
 * another request 422. Keys live in MongoDB, so another instance on the same database replays too.
 */
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { KEY_LIFETIME_MS, type KeyDoc } from "../../src/idempotency/key-store.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { type Account, senderNameRequest, storedFor } from "../rest/helpers.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { failureOf } from "../support/error-details.ts";
import { adminHeaders, type RunningService, startService } from "../support/service.ts";

let database: TestDatabase;
let service: RunningService;
/** A second instance on the same database. */
let other: RunningService;
const sessions: Http2SessionManager[] = [];

beforeAll(async () => {
  database = await testDatabase();
  service = await startService({}, database);
  other = await startService({}, database);
});
afterAll(async () => {
  for (const session of sessions) session.abort();
  await service?.close();
  await other?.close();
  await database?.close();
});

interface Answer {
  status: number;
  replayed: string | null;
  body: unknown;
}

async function post(
  target: RunningService,
  path: string,
  body: unknown,
  key: string | undefined,
): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key !== undefined) headers["idempotency-key"] = key;
  const response = await fetch(`${target.baseUrl}${path}`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    replayed: response.headers.get("idempotent-replayed"),
    body: await response.json(),
  };
}

const keys = () => service.store.db.collection<KeyDoc>("idempotency_keys");
let keyCount = 0;
const newKey = () => `key-${Date.now()}-${++keyCount}`;
const sms = (who: Account, text = "hello") => ({ to: "+4915112345678", text, ...who });

describe("POST /sms with Idempotency-Key", () => {
  let account: Account;
  beforeAll(async () => {
    account = await service.createAccount({ credit: 100 });
  });

  it("a retry gets the first answer, marked replayed; one message stored and charged", async () => {
    const key = newKey();
    const first = await post(service, "/sms", sms(account), key);
    expect(first.status).toBe(200);
    expect(first.replayed).toBeNull();
    const again = await post(service, "/sms", sms(account), key);
    expect(again).toEqual({ ...first, replayed: "true" });
    expect(await storedFor(service, account.apiKey)).toMatchObject({ messages: 1, credit: 99 });
  });

  it("another instance on the same database replays it too (the keys are in MongoDB)", async () => {
    const key = newKey();
    const first = await post(service, "/sms", sms(account), key);
    const elsewhere = await post(other, "/sms", sms(account), key);
    expect(elsewhere).toEqual({ ...first, replayed: "true" });
  });

  it("the same key with another body is 422 and stores nothing", async () => {
    const key = newKey();
    await post(service, "/sms", sms(account, "first"), key);
    const before = await storedFor(service, account.apiKey);
    const changed = await post(service, "/sms", sms(account, "second"), key);
    expect(changed.status).toBe(422);
    expect(changed.body).toEqual({
      errors: { request: [expect.stringContaining("was used with a different request")] },
    });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it("the same key while the first request is still running is 409", async () => {
    const key = newKey();
    const first = await post(service, "/sms", sms(account), key);
    // As if another instance were still working on it: the record is running, started just now.
    await keys().updateOne(
      { accountId: account.apiKey, key },
      { $set: { state: "running", startedAt: new Date() }, $unset: { answer: "" } },
    );
    const during = await post(service, "/sms", sms(account), key);
    expect(during.status).toBe(409);
    expect(during.body).toEqual({
      errors: { request: [expect.stringContaining("is still being processed")] },
    });
    expect(first.status).toBe(200);
  });

  it("concurrent retries with one key store one message; each answer is it or a 409", async () => {
    const who = await service.createAccount({ credit: 100 });
    const key = newKey();
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => post(service, "/sms", sms(who), key)),
    );
    const ok = answers.filter((a) => a.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(answers.every((a) => a.status === 200 || a.status === 409)).toBe(true);
    expect(new Set(ok.map((a) => JSON.stringify(a.body))).size).toBe(1);
    expect(await storedFor(service, who.apiKey)).toMatchObject({ messages: 1, credit: 99 });
  });

  it("a run that crashed (running for longer than the stale cutoff) does not block the key", async () => {
    const who = await service.createAccount({ credit: 100 });
    const key = newKey();
    const body = sms(who);
    // A first attempt claimed the key 10 minutes ago and never finished.
    const first = await post(service, "/sms", body, key);
    await keys().updateOne(
      { accountId: who.apiKey, key },
      {
        $set: { state: "running", startedAt: new Date(Date.now() - 10 * 60_000) },
        $unset: { answer: "" },
      },
    );
    const retry = await post(service, "/sms", body, key);
    expect(retry.status).toBe(200);
    expect(retry.replayed).toBeNull();
    expect(retry.body).not.toEqual(first.body);
    expect((await post(service, "/sms", body, key)).body).toEqual(retry.body);
  });

  it("after 24 hours the key is free again, even before the TTL index removes it", async () => {
    const key = newKey();
    const first = await post(service, "/sms", sms(account), key);
    await keys().updateOne(
      { accountId: account.apiKey, key },
      { $set: { expiresAt: new Date(Date.now() - 1000) } },
    );
    const later = await post(service, "/sms", sms(account), key);
    expect(later.status).toBe(200);
    expect(later.replayed).toBeNull();
    expect(later.body).not.toEqual(first.body);
  });

  it("keys belong to an account: another account's same key is its own request", async () => {
    const key = newKey();
    const mine = await post(service, "/sms", sms(account), key);
    const someone = await service.createAccount({ credit: 10 });
    const theirs = await post(service, "/sms", sms(someone), key);
    expect(theirs.status).toBe(200);
    expect(theirs.replayed).toBeNull();
    expect(theirs.body).not.toEqual(mine.body);
  });

  it("a refusal is replayed too: the key of a 402 answers 402 after credit is added", async () => {
    const poor = await service.createAccount({ credit: 0 });
    const key = newKey();
    const refused = await post(service, "/sms", sms(poor), key);
    expect(refused.status).toBe(402);
    await service.admin.addCredit({ apiKey: poor.apiKey, amountMicros: 10_000_000n }, adminHeaders);
    expect(await post(service, "/sms", sms(poor), key)).toEqual({ ...refused, replayed: "true" });
    expect((await post(service, "/sms", sms(poor), newKey())).status).toBe(200);
  });

  it.each([
    ["empty", ""],
    ["longer than 255 characters", "k".repeat(256)],
    ["holding a space", "two words"],
    ["not ASCII", "clé"],
  ])("a key %s is 400 errors.request", async (_what, key) => {
    const before = await storedFor(service, account.apiKey);
    const answer = await post(service, "/sms", sms(account), key);
    expect(answer.status).toBe(400);
    // The REST schema refuses it before the service does (same message, under the header's name).
    expect(Object.values((answer.body as { errors: object }).errors).flat()).toEqual([
      "Idempotency-Key must be 1 to 255 visible ASCII characters",
    ]);
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it("keys are kept in a collection with a unique index on account and key and a TTL index", async () => {
    const indexes = await keys().indexes();
    expect(indexes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ key: { accountId: 1, key: 1 }, unique: true }),
        expect.objectContaining({ key: { expiresAt: 1 }, expireAfterSeconds: 0 }),
      ]),
    );
    const stored = await keys().findOne({ accountId: account.apiKey });
    expect(stored?.expiresAt.getTime()).toBeGreaterThan(Date.now() + KEY_LIFETIME_MS - 3_600_000);
  });
});

describe("POST /sms-batch and POST /sender_names with Idempotency-Key", () => {
  let account: Account;
  beforeAll(async () => {
    account = await service.createAccount({ credit: 100 });
  });

  const batch = (text: string) => ({
    messages: [
      { to: "+4915112345678", text },
      { to: "12", text },
    ],
    name: "retry",
    ...account,
  });

  it("a batch retried is replayed, stored and charged once; another body is 422 as a string", async () => {
    const key = newKey();
    const first = await post(service, "/sms-batch", batch("hi"), key);
    expect(first.status).toBe(200);
    expect(await post(service, "/sms-batch", batch("hi"), key)).toEqual({
      ...first,
      replayed: "true",
    });
    expect(await storedFor(service, account.apiKey)).toMatchObject({
      batches: 1,
      messages: 1,
      credit: 99,
    });
    const changed = await post(service, "/sms-batch", batch("changed"), key);
    expect(changed.status).toBe(422);
    expect(changed.body).toEqual({
      errors: { request: expect.stringContaining("was used with a different request") },
    });
  });

  it("a sender name request retried is replayed, not refused as a duplicate", async () => {
    const key = newKey();
    const body = { ...senderNameRequest("Retried"), ...account };
    const first = await post(service, "/sender_names", body, key);
    expect(first.status).toBe(200);
    expect(await post(service, "/sender_names", body, key)).toEqual({
      ...first,
      replayed: "true",
    });
    // Without the key, the same request is what it always was: a duplicate name.
    expect((await post(service, "/sender_names", body, undefined)).status).toBe(400);
  });
});

describe.each([
  ["Connect", () => createConnectTransport({ baseUrl: service.grpcUrl, httpVersion: "2" })],
  [
    "gRPC",
    (): Transport => {
      const sessionManager = new Http2SessionManager(service.grpcUrl);
      sessions.push(sessionManager);
      return createGrpcTransport({ baseUrl: service.grpcUrl, sessionManager });
    },
  ],
])("SendMessage with idempotency-key metadata over %s", (_name, transport) => {
  it("a retry answers the same message, marked replayed; another request is ALREADY_EXISTS", async () => {
    const who = await service.createAccount({ credit: 100 });
    const messaging = createClient(MessagingService, transport());
    const key = newKey();
    const headers = {
      authorization: basicAuthorization(who.apiKey, who.apiSecret),
      "idempotency-key": key,
    };
    const replayed: (string | null)[] = [];
    const onHeader = (h: Headers) => replayed.push(h.get("idempotent-replayed"));
    const first = await messaging.sendMessage(
      { to: "+4915112345678", text: "hi" },
      { headers, onHeader },
    );
    const again = await messaging.sendMessage(
      { to: "+4915112345678", text: "hi" },
      { headers, onHeader },
    );
    expect(again.message).toEqual(first.message);
    expect(replayed).toEqual([null, "true"]);
    expect(await storedFor(service, who.apiKey)).toMatchObject({ messages: 1, credit: 99 });

    const error = await messaging
      .sendMessage({ to: "+4915112345678", text: "other" }, { headers })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(error?.code).toBe(Code.AlreadyExists);
    expect(error && failureOf(error).reason).toBe("IDEMPOTENCY_KEY_REUSED");

    const invalid = await messaging
      .sendMessage(
        { to: "+4915112345678", text: "hi" },
        { headers: { ...headers, "idempotency-key": "two words" } },
      )
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(invalid?.code).toBe(Code.InvalidArgument);
    expect(invalid?.rawMessage).toBe("Idempotency-Key must be 1 to 255 visible ASCII characters");
    expect(invalid && failureOf(invalid).reason).toBe("IDEMPOTENCY_KEY_INVALID");
  });
});
