/**
 * POST /sms over real HTTP: the Message body, splitting as the API applies it (the pure counting
 * rules are unit-tested in test/domain), credit per part, ttl, `from` rules, and every request
 * error with its shape. A refused request stores and charges nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PHONE_NUMBER_ERROR } from "../../src/domain/phone-numbers.ts";
import {
  adminHeaders,
  postForm,
  postJson,
  type RunningService,
  startService,
} from "../support/service.ts";
import {
  type Account,
  approvedSenderName,
  creditOf,
  senderNameRequest,
  setDefaultSender,
  storedFor,
} from "./helpers.ts";

let service: RunningService;
let account: Account;
let url: string;
const TO = "+4915112345678";

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 10_000 });
  url = `${service.baseUrl}/sms`;
});
afterAll(() => service?.close());

/** Sends a JSON /sms and checks the split the API answered with against what it stored. */
async function send(text: string, extra: Record<string, unknown> = {}) {
  const before = await creditOf(service, account.apiKey);
  const { status, body } = await postJson(url, { to: TO, text, ...account, ...extra });
  return { status, body, before };
}

function expectParts(
  body: { id: number; text: string; segments?: { id: number; text: string }[] },
  lengths: number[],
) {
  const segments = body.segments ?? [];
  expect(segments.map((s) => s.text.length)).toEqual(lengths);
  expect(segments.map((s) => s.text).join("")).toBe(body.text);
  const ids = segments.map((s) => s.id);
  for (const id of ids) expect(Number.isInteger(id) && id > 0).toBe(true);
  expect(new Set([body.id, ...ids]).size).toBe(ids.length + 1);
}

describe("the Message body", () => {
  it("has id, to, from, text, status ACCEPTED and creditRemaining; no segments for one part", async () => {
    const { status, body, before } = await send("Hello");
    expect(status).toBe(200);
    expect(body).toEqual({
      id: expect.any(Number),
      to: TO,
      from: "SMSINFO",
      text: "Hello",
      status: "ACCEPTED",
      creditRemaining: before - 1,
    });
    expect(Number.isInteger(body.id)).toBe(true);
    expect(await creditOf(service, account.apiKey)).toBe(before - 1);
    const stored = await service.store.messages.findOne({ _id: body.id });
    expect(stored).toMatchObject({
      accountId: account.apiKey,
      to: TO,
      text: "Hello",
      parts: 1,
      ttl: 21600,
    });
  });

  it("echoes `to` as submitted, with or without +", async () => {
    const { status, body } = await send("x", { to: "4915112345678" });
    expect(status).toBe(200);
    expect(body.to).toBe("4915112345678");
  });

  it("accepts a form body (UTF-8, + as space) the same way", async () => {
    const { status, body } = await postForm(url, { to: TO, text: "Grüße aus Köln", ...account });
    expect(status).toBe(200);
    expect(body).toMatchObject({ to: TO, text: "Grüße aus Köln", status: "ACCEPTED" });
    const spaced = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `to=%2B4915112345678&text=a+b%20c&apiKey=${account.apiKey}&apiSecret=${encodeURIComponent(account.apiSecret)}`,
    });
    expect((await spaced.json()).text).toBe("a b c");
  });

  it("ignores unknown fields", async () => {
    const { status, body } = await send("x", { unknown: 1, nested: { a: [1] }, priority: "high" });
    expect(status).toBe(200);
    expect(body).not.toHaveProperty("unknown");
  });
});

describe("splitting, as the API applies it", () => {
  it("160 Latin-1 characters are one message; 161 are 153 + 8, each part charged", async () => {
    const one = await send("a".repeat(160));
    expect(one.status).toBe(200);
    expect(one.body.segments).toBeUndefined();
    expect(one.body.creditRemaining).toBe(one.before - 1);

    const two = await send("a".repeat(161));
    expect(two.status).toBe(200);
    expectParts(two.body, [153, 8]);
    expect(two.body.creditRemaining).toBe(two.before - 2);
    expect(await creditOf(service, account.apiKey)).toBe(two.before - 2);
  });

  it("é keeps the Latin-1 rule (160 é is one message); one € forces 70/67", async () => {
    const latin = await send("é".repeat(160));
    expect(latin.body.segments).toBeUndefined();
    expect(latin.body.creditRemaining).toBe(latin.before - 1);

    const seventy = await send(`€${"a".repeat(69)}`);
    expect(seventy.body.segments).toBeUndefined();
    const seventyOne = await send(`€${"a".repeat(70)}`);
    expectParts(seventyOne.body, [67, 4]);
    expect(seventyOne.body.creditRemaining).toBe(seventyOne.before - 2);
  });

  it("never splits an emoji at a part boundary: it moves to the next part", async () => {
    const text = `${"a".repeat(66)}😀${"b".repeat(10)}`;
    const { body } = await send(text);
    expectParts(body, [66, 12]);
    expect(body.segments[1].text.startsWith("😀")).toBe(true);
  });

  it("stores the parts with the ids it answered", async () => {
    const { body } = await send("b".repeat(400));
    expectParts(body, [153, 153, 94]);
    const stored = await service.store.messages.findOne({ _id: body.id });
    expect(stored?.parts).toBe(3);
    expect(stored?.segments).toEqual(body.segments);
  });

  it("accepts 10 parts (1530 Latin-1, 670 other units) and refuses 11 with errors.text", async () => {
    const latin = await send("c".repeat(1530));
    expect(latin.status).toBe(200);
    expect(latin.body.segments).toHaveLength(10);
    expect(latin.body.creditRemaining).toBe(latin.before - 10);
    const other = await send("Ж".repeat(670));
    expect(other.status).toBe(200);
    expectParts(other.body, Array(10).fill(67));

    const before = await storedFor(service, account.apiKey);
    for (const text of ["c".repeat(1531), "Ж".repeat(671)]) {
      const { status, body } = await send(text);
      expect(status).toBe(400);
      expect(body).toEqual({
        errors: { text: [expect.stringMatching(/^text is too long: more than 10 parts/)] },
      });
    }
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });
});

describe("ttl: 1 to 21600 seconds, default 21600", () => {
  it.each([1, 21600])("accepts %i (JSON and form) and stores it", async (ttl) => {
    const json = await send("x", { ttl });
    expect(json.status).toBe(200);
    const form = await postForm(url, { to: TO, text: "x", ttl: String(ttl), ...account });
    expect(form.status).toBe(200);
    for (const id of [json.body.id, form.body.id]) {
      expect((await service.store.messages.findOne({ _id: id }))?.ttl).toBe(ttl);
    }
  });

  it("an empty form ttl is the default", async () => {
    const form = await postForm(url, { to: TO, text: "x", ttl: "", ...account });
    expect(form.status).toBe(200);
    expect((await service.store.messages.findOne({ _id: form.body.id }))?.ttl).toBe(21600);
  });

  it.each<[string, unknown]>([
    ["0", 0],
    ["21601", 21601],
    ["-1", -1],
    ["1.5", 1.5],
    ['"60" (a string in JSON)', "60"],
    ["true", true],
  ])("refuses %s with errors.ttl", async (_name, ttl) => {
    const before = await storedFor(service, account.apiKey);
    const { status, body } = await send("x", { ttl });
    expect(status).toBe(400);
    expect(body).toEqual({ errors: { ttl: ["ttl must be an integer from 1 to 21600 seconds"] } });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it.each(["0", "21601", "abc", "1e3", " 60", "60.0"])("refuses the form value %j", async (ttl) => {
    const { status, body } = await postForm(url, { to: TO, text: "x", ttl, ...account });
    expect(status).toBe(400);
    expect(body).toEqual({ errors: { ttl: ["ttl must be an integer from 1 to 21600 seconds"] } });
  });
});

describe("from", () => {
  let other: Account;
  beforeAll(async () => {
    other = await service.createAccount({ credit: 100 });
    await approvedSenderName(service, other, "Approved1");
  });

  it("defaults to the shared sender literal; the literal itself is allowed; empty is absent", async () => {
    const sendAs = (from?: string) =>
      postJson(url, { to: TO, text: "x", ...other, ...(from !== undefined && { from }) });
    expect((await sendAs()).body.from).toBe("SMSINFO");
    expect((await sendAs("SMSINFO")).body.from).toBe("SMSINFO");
    expect((await sendAs("")).body.from).toBe("SMSINFO");
    expect((await sendAs("Approved1")).body.from).toBe("Approved1");
  });

  it("refuses a pending name, an unknown name and another account's approved name", async () => {
    await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("Pending1"),
      ...other,
    });
    const before = await storedFor(service, account.apiKey);
    for (const [who, from] of [
      [other, "Pending1"],
      [other, "Nobody"],
      [account, "Approved1"],
      [other, "smsinfo"],
    ] as const) {
      const { status, body } = await postJson(url, { to: TO, text: "x", from, ...who });
      expect(status).toBe(400);
      expect(body).toEqual({
        errors: {
          from: [
            "from must be the shared sender SMSINFO, an approved sender name of the account or a number assigned to it",
          ],
        },
      });
    }
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it("uses the account's default sender (set by the operator) when from is omitted", async () => {
    await setDefaultSender(service, other, "Approved1");
    const { body } = await postJson(url, { to: TO, text: "x", ...other });
    expect(body.from).toBe("Approved1");
    expect((await postJson(url, { to: TO, text: "x", from: "SMSINFO", ...other })).body.from).toBe(
      "SMSINFO",
    );
    await setDefaultSender(service, other, "");
    expect((await postJson(url, { to: TO, text: "x", ...other })).body.from).toBe("SMSINFO");
  });
});

describe("request errors: {errors: {parameter: [message]}}", () => {
  it("every missing required parameter is listed, credentials included", async () => {
    const { status, body } = await postJson(url, {});
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: {
        to: ["to cannot be empty"],
        text: ["text cannot be empty"],
        apiKey: ["apiKey cannot be empty"],
        apiSecret: ["apiSecret cannot be empty"],
      },
    });
  });

  it("empty and null values are missing ones", async () => {
    const json = await postJson(url, { to: "", text: null, ...account });
    expect(json.status).toBe(400);
    expect(json.body).toEqual({
      errors: { to: ["to cannot be empty"], text: ["text cannot be empty"] },
    });
    const form = await postForm(url, { to: TO, text: "", apiKey: account.apiKey, apiSecret: "" });
    expect(form.status).toBe(400);
    expect(form.body).toEqual({
      errors: { text: ["text cannot be empty"], apiSecret: ["apiSecret cannot be empty"] },
    });
  });

  it("a number or an array where a string belongs is an error on that parameter", async () => {
    const { status, body } = await postJson(url, {
      to: 4915112345678,
      text: ["a"],
      from: { name: "x" },
      statusCallback: 1,
      ...account,
    });
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: {
        to: ["to must be a string"],
        text: ["text must be a string"],
        from: ["from must be a string"],
        statusCallback: ["statusCallback must be a string"],
      },
    });
  });

  it("a repeated form parameter is an error on that parameter", async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams([
        ["to", TO],
        ["to", "+4915199999999"],
        ["text", "x"],
        ["apiKey", account.apiKey],
        ["apiSecret", account.apiSecret],
      ]),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ errors: { to: ["to must be a string"] } });
  });

  it.each([
    "12345",
    "+0151123456",
    "+49 151 1234567",
    "+49-151-1234567",
    "+1234567890123456",
    "abc",
  ])("refuses the phone number %j with a clear errors.to", async (to) => {
    const { status, body } = await send("x", { to });
    expect(status).toBe(400);
    expect(body).toEqual({ errors: { to: [PHONE_NUMBER_ERROR] } });
  });

  it("accepts 8 and 15 digits", async () => {
    expect((await send("x", { to: "12345678" })).status).toBe(200);
    expect((await send("x", { to: "+123456789012345" })).status).toBe(200);
  });

  it("refuses a statusCallback that is not an absolute http(s) URL", async () => {
    for (const statusCallback of ["not a url", "ftp://example.com/x", "/relative"]) {
      const { status, body } = await send("x", { statusCallback });
      expect(status).toBe(400);
      expect(body).toEqual({
        errors: { statusCallback: ["statusCallback must be an absolute http or https URL"] },
      });
    }
    const ok = await send("x", { statusCallback: "https://example.com/hook?a=1" });
    expect(ok.status).toBe(200);
    const stored = await service.store.messages.findOne({ _id: ok.body.id });
    expect(stored?.statusCallback).toBe("https://example.com/hook?a=1");
  });

  it("reports every invalid parameter at once, shape checks before value checks", async () => {
    // Missing, empty, wrongly typed and out-of-range parameters are found first, together.
    const shape = await send("", { to: "1", ttl: 0, from: "Nobody" });
    expect(shape.status).toBe(400);
    expect(Object.keys(shape.body.errors).sort()).toEqual(["text", "ttl"]);
    // Then the values: phone number, sender and callback URL, together.
    const values = await send("x", { to: "1", from: "Nobody", statusCallback: "x" });
    expect(values.status).toBe(400);
    expect(Object.keys(values.body.errors).sort()).toEqual(["from", "statusCallback", "to"]);
  });
});

describe("credentials", () => {
  it("wrong ones are 401 with errors.request", async () => {
    for (const credentials of [
      { apiKey: account.apiKey, apiSecret: "wrong" },
      { apiKey: "unknown", apiSecret: account.apiSecret },
    ]) {
      const { status, body } = await postJson(url, { to: TO, text: "x", ...credentials });
      expect(status).toBe(401);
      expect(body).toEqual({
        errors: { request: ["apiKey and apiSecret do not match an account"] },
      });
    }
  });
});

describe("not enough credit", () => {
  it("is 402 with errors.request; nothing is stored or charged", async () => {
    const poor = await service.createAccount({ credit: 2 });
    const before = await storedFor(service, poor.apiKey);
    const { status, body } = await postJson(url, { to: TO, text: "d".repeat(400), ...poor });
    expect(status).toBe(402);
    expect(body).toEqual({
      errors: { request: ["not enough credit: this request costs 3; the account has 2"] },
    });
    expect(await storedFor(service, poor.apiKey)).toEqual(before);
    // What is left can still be spent, to the last unit.
    const two = await postJson(url, { to: TO, text: "d".repeat(300), ...poor });
    expect(two.status).toBe(200);
    expect(two.body.creditRemaining).toBe(0);
    expect((await postJson(url, { to: TO, text: "d", ...poor })).status).toBe(402);
    const account2 = await service.admin.getAccount({ apiKey: poor.apiKey }, adminHeaders);
    expect(account2.account?.creditMicros).toBe(0n);
  });
});
