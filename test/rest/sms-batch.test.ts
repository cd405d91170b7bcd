/**
 * POST /sms-batch over real HTTP: partial acceptance by index, whole-request errors as strings,
 * the 10000-message limit with a full batch of the longest texts, the batch name limit, `from`
 * inheritance, all-or-nothing credit. Batch information: sms-batch-info.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PHONE_NUMBER_ERROR } from "../../src/domain/phone-numbers.ts";
import { postForm, postJson, type RunningService, startService } from "../support/service.ts";
import {
  type Account,
  approvedSenderName,
  creditOf,
  phoneNumbers,
  rawPost,
  setDefaultSender,
  storedFor,
  withQuery,
} from "./helpers.ts";

let service: RunningService;
let account: Account;
let url: string;
const TO = "+4915112345678";

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 1_000_000 });
  url = `${service.baseUrl}/sms-batch`;
});
afterAll(() => service?.close());

const batch = (body: Record<string, unknown>, who: Account = account) =>
  postJson(url, { ...body, ...who });

const info = (id: number | string, who: Account = account) =>
  withQuery("GET", `${url}/${id}`, { ...who });

describe("partial acceptance", () => {
  it("accepts the valid messages and lists the invalid ones by 0-based index", async () => {
    const before = await creditOf(service, account.apiKey);
    const { status, body } = await batch({
      name: "spring sale",
      messages: [
        { to: TO, text: "one part" },
        { to: "123", text: "bad number" },
        { to: TO },
        { to: TO, text: "x".repeat(161) },
        { text: "no number", from: "Nobody" },
        { to: TO, text: "y".repeat(1531) },
      ],
    });
    expect(status).toBe(200);
    expect(body).toEqual({
      id: expect.any(Number),
      name: "spring sale",
      totalCount: 6,
      acceptedCount: 2,
      rejectedCount: 4,
      errors: [
        { index: 1, text: PHONE_NUMBER_ERROR },
        { index: 2, text: "text cannot be empty" },
        {
          index: 4,
          text: expect.stringMatching(
            /^to cannot be empty; from must be the shared sender SMSINFO/,
          ),
        },
        { index: 5, text: expect.stringMatching(/^text is too long: more than 10 parts/) },
      ],
    });
    expect(Number.isInteger(body.id)).toBe(true);
    // creditRemaining is not part of the REST batch body; the charge is 1 + 2 parts.
    expect(body).not.toHaveProperty("creditRemaining");
    expect(await creditOf(service, account.apiKey)).toBe(before - 3);
    const stored = await service.store.messages.find({ batchId: body.id }).toArray();
    expect(stored.map((m) => m.parts).sort()).toEqual([1, 2]);
    expect(await service.store.batches.countDocuments({ _id: body.id })).toBe(1); // committed
  });

  it("has no errors key when every message is valid, and an empty name when none is given", async () => {
    const { status, body } = await batch({ messages: [{ to: TO, text: "a" }] });
    expect(status).toBe(200);
    expect(body).toEqual({
      id: expect.any(Number),
      name: "",
      totalCount: 1,
      acceptedCount: 1,
      rejectedCount: 0,
    });
  });

  it("a batch whose every message is invalid is stored and charges nothing", async () => {
    const before = await creditOf(service, account.apiKey);
    const { status, body } = await batch({
      messages: [
        { to: "1", text: "a" },
        { to: TO, text: "" },
      ],
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ totalCount: 2, acceptedCount: 0, rejectedCount: 2 });
    expect(await creditOf(service, account.apiKey)).toBe(before);
    const got = await info(body.id);
    expect(got.body).toMatchObject({ acceptedCount: 0, messages: [], isActive: false });
  });

  it("ignores unknown fields, in the body and in messages; null is absent", async () => {
    const { status, body } = await batch({
      priority: 1,
      from: null,
      messages: [{ to: TO, text: "a", extra: [1], from: null }],
    });
    expect(status).toBe(200);
    expect(body.acceptedCount).toBe(1);
  });
});

describe("whole-request errors: {errors: {parameter: message}}, values are strings", () => {
  it("missing parameters, credentials included", async () => {
    const { status, body } = await postJson(url, {});
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: {
        messages: "messages cannot be empty",
        apiKey: "apiKey cannot be empty",
        apiSecret: "apiSecret cannot be empty",
      },
    });
  });

  it("an empty messages array", async () => {
    const { status, body } = await batch({ messages: [] });
    expect(status).toBe(400);
    expect(body).toEqual({ errors: { messages: "messages cannot be empty" } });
  });

  it("a wrongly typed value inside messages refuses the whole batch on `messages`", async () => {
    const before = await storedFor(service, account.apiKey);
    const { status, body } = await batch({
      messages: [
        { to: TO, text: "ok" },
        { to: 4915112345678, text: "a" },
        "text",
        null,
        { text: ["a"] },
      ],
    });
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: {
        messages:
          "messages[1].to must be a string; messages[2] must be an object; messages[3] must be an object; messages[4].text must be a string",
      },
    });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it("lists at most 10 errors per parameter, then how many more", async () => {
    const messages = Array.from({ length: 30 }, () => ({ to: 4915112345678, text: "a" }));
    const { status, body } = await batch({ messages });
    expect(status).toBe(400);
    const parts = body.errors.messages.split("; ");
    expect(parts).toHaveLength(11);
    expect(parts[0]).toBe("messages[0].to must be a string");
    expect(parts[10]).toBe("and 20 more errors in messages");
  });

  it("messages, name and from of the wrong type", async () => {
    const { status, body } = await batch({ messages: { to: TO }, name: 5, from: ["a"] });
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: {
        messages: "messages must be an array",
        name: "name must be a string",
        from: "from must be a string",
      },
    });
  });

  it("a form body is a parse failure: errors.request, an array like on every endpoint", async () => {
    const { status, body } = await postForm(url, { messages: "x", ...account });
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: {
        request: [
          "POST /sms-batch accepts application/json only, not application/x-www-form-urlencoded",
        ],
      },
    });
  });

  it("wrong credentials are 401 with a string", async () => {
    const { status, body } = await batch(
      { messages: [{ to: TO, text: "a" }] },
      { apiKey: account.apiKey, apiSecret: "wrong" },
    );
    expect(status).toBe(401);
    expect(body).toEqual({ errors: { request: "apiKey and apiSecret do not match an account" } });
  });

  it("a parent from that is not allowed, and a bad statusCallback", async () => {
    const { status, body } = await batch({
      from: "Nobody",
      statusCallback: "mailto:x@example.com",
      messages: [{ to: TO, text: "a" }],
    });
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: {
        from: "from must be the shared sender SMSINFO, an approved sender name of the account or a number assigned to it",
        statusCallback: "statusCallback must be an absolute http or https URL",
      },
    });
  });
});

describe("batch name: at most 20 characters", () => {
  it("accepts 20 (an emoji counts as one) and refuses 21", async () => {
    const twenty = `${"n".repeat(19)}😀`;
    const ok = await batch({ name: twenty, messages: [{ to: TO, text: "a" }] });
    expect(ok.status).toBe(200);
    expect(ok.body.name).toBe(twenty);
    expect((await info(ok.body.id)).body.name).toBe(twenty);

    const before = await storedFor(service, account.apiKey);
    const refused = await batch({ name: "n".repeat(21), messages: [{ to: TO, text: "a" }] });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ errors: { name: "name must be at most 20 characters" } });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });
});

describe("from", () => {
  let owner: Account;
  beforeAll(async () => {
    owner = await service.createAccount({ credit: 100 });
    await approvedSenderName(service, owner, "Parent");
    await approvedSenderName(service, owner, "Child");
  });

  it("a message's from overrides the batch's; the batch's applies otherwise; else the default", async () => {
    const { body } = await batch(
      {
        from: "Parent",
        messages: [
          { to: TO, text: "a" },
          { to: TO, text: "b", from: "Child" },
          { to: TO, text: "c", from: "SMSINFO" },
          { to: TO, text: "d", from: "" },
          { to: TO, text: "e", from: "Nobody" },
        ],
      },
      owner,
    );
    expect(body).toMatchObject({ acceptedCount: 4, rejectedCount: 1 });
    expect(body.errors).toEqual([
      {
        index: 4,
        text: "from must be the shared sender SMSINFO, an approved sender name of the account or a number assigned to it",
      },
    ]);
    const got = await info(body.id, owner);
    expect(got.body.messages.map((m: { from: string }) => m.from)).toEqual([
      "Parent",
      "Child",
      "SMSINFO",
      "Parent",
    ]);

    await setDefaultSender(service, owner, "Child");
    const defaulted = await batch({ messages: [{ to: TO, text: "a" }] }, owner);
    expect((await info(defaulted.body.id, owner)).body.messages[0].from).toBe("Child");
  });
});

describe("credit: a batch is all or nothing", () => {
  it("is 402 when the accepted parts cost more than the credit; nothing is stored", async () => {
    const poor = await service.createAccount({ credit: 3 });
    const before = await storedFor(service, poor.apiKey);
    const { status, body } = await batch(
      {
        messages: [
          { to: TO, text: "a" },
          { to: TO, text: "b".repeat(200) },
          { to: TO, text: "c" },
          { to: "1", text: "rejected, not charged" },
        ],
      },
      poor,
    );
    expect(status).toBe(402);
    expect(body).toEqual({
      errors: { request: "not enough credit: this request costs 4; the account has 3" },
    });
    expect(await storedFor(service, poor.apiKey)).toEqual(before);
    const fits = await batch(
      {
        messages: [
          { to: TO, text: "b".repeat(200) },
          { to: TO, text: "c" },
        ],
      },
      poor,
    );
    expect(fits.status).toBe(200);
    expect(await creditOf(service, poor.apiKey)).toBe(0);
  });
});

describe("at most 10000 messages", () => {
  it("a full batch of 10000 texts of 10 non-Latin-1 parts fits, even \\u-escaped (40 MB)", async () => {
    const text = "Ж".repeat(670);
    const messages = phoneNumbers(10_000).map((to) => ({ to, text }));
    // Python's json.dumps writes every non-ASCII character as \uXXXX: six bytes each.
    const json = JSON.stringify({ name: "full", messages, ...account }).replace(/Ж/g, "\\u0416");
    expect(json.length).toBeGreaterThan(40_000_000);
    const before = await creditOf(service, account.apiKey);
    const { status, body } = await rawPost(url, "application/json", json);
    expect(status).toBe(200);
    expect(body).toEqual({
      id: expect.any(Number),
      name: "full",
      totalCount: 10_000,
      acceptedCount: 10_000,
      rejectedCount: 0,
    });
    expect(await creditOf(service, account.apiKey)).toBe(before - 100_000);

    const got = await info(body.id);
    expect(got.status).toBe(200);
    expect(got.body.messages).toHaveLength(10_000);
    expect(got.body.messages[9999]).toEqual({
      id: expect.any(Number),
      from: "SMSINFO",
      to: messages[9999]?.to,
      status: "ACCEPTED",
    });
    const stored = await service.store.messages.findOne({ _id: got.body.messages[0].id });
    expect(stored?.segments?.map((s) => s.text).join("")).toBe(text);
    const ids = new Set<number>();
    for (const m of got.body.messages) ids.add(m.id);
    expect(ids.size).toBe(10_000);
  }, 60_000);

  it("10001 messages are refused whole with errors.messages; nothing is stored", async () => {
    const before = await storedFor(service, account.apiKey);
    const messages = phoneNumbers(10_001).map((to) => ({ to, text: "a" }));
    const { status, body } = await batch({ messages });
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: { messages: "messages holds more than 10000 messages; at most 10000 are allowed" },
    });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });
});
