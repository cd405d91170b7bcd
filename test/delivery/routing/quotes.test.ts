/**
 * Quotes (issue 27, item 5): GET /sms/quote and MessagingService.QuoteMessage answer parts,
 * encoding, country, number type and prices, never the carrier, and what they answer is what
 * POST /sms and POST /sms-batch then charge. Real HTTP and Connect on the test database.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService, NumberType, TextEncoding } from "../../../gen/sms/v1/messaging_pb.ts";
import { PHONE_NUMBER_ERROR } from "../../../src/domain/phone-numbers.ts";
import { type Account, accountCall, creditOf } from "../../rest/helpers.ts";
import { getJson, postJson, type RunningService, startService } from "../../support/service.ts";

const FILE = `carriers:
  - { name: alpha, url: simulator }
  - { name: beta, url: simulator }
routes:
  - { name: germany, match: { countries: [DE] }, carriers: [alpha, beta] }
  - { name: default, split: { alpha: 1, beta: 1 } }
prices:
  default: 0.5
  countries: { DE: 0.08, GG: 0.06 }
  prefixes: { "+4915": 0.09 }
`;

let service: RunningService;
let account: Account;
const micros = (credit: number) => Math.round(credit * 1_000_000);

beforeAll(async () => {
  const path = join(mkdtempSync(join(tmpdir(), "quotes-")), "carriers.yaml");
  writeFileSync(path, FILE);
  service = await startService({ SMS_CARRIERS_FILE: path });
  account = await service.createAccount({ credit: 100 });
});
afterAll(() => service?.close());

function quote(to: string, text: string, credentials: Partial<Account> = account) {
  const query = new URLSearchParams({ to, text, ...credentials });
  return getJson(`${service.baseUrl}/sms/quote?${query}`);
}

describe("GET /sms/quote", () => {
  it("answers parts, encoding, country, number type and prices", async () => {
    expect(await quote("+447911123456", "hello")).toEqual({
      status: 200,
      body: {
        to: "+447911123456",
        country: "GG",
        numberType: "MOBILE",
        parts: 1,
        encoding: "latin1",
        pricePerPart: 0.06,
        price: 0.06,
      },
    });
    expect(await quote("+4915112345678", "Ж".repeat(71))).toEqual({
      status: 200,
      body: {
        to: "+4915112345678",
        country: "DE",
        numberType: "MOBILE",
        parts: 2,
        encoding: "unicode",
        pricePerPart: 0.09,
        price: 0.18,
      },
    });
  });

  it("gives the simulator's numbers no country, no type and the default price", async () => {
    expect((await quote("99912345671", "x".repeat(161))).body).toEqual({
      to: "99912345671",
      country: null,
      numberType: null,
      parts: 2,
      encoding: "latin1",
      pricePerPart: 0.5,
      price: 1,
    });
  });

  it("reads an unencoded + (a space in a query string) as +", async () => {
    const raw = `${service.baseUrl}/sms/quote?to=+493012345678&text=hi&apiKey=${account.apiKey}&apiSecret=${account.apiSecret}`;
    expect((await getJson(raw)).body).toMatchObject({
      to: "+493012345678",
      country: "DE",
      price: 0.08,
    });
  });

  it("is what POST /sms then charges, one and three parts", async () => {
    for (const [to, text] of [
      ["+4915112345678", "one"],
      ["+493012345678", "y".repeat(307)],
      ["+447911123456", "Ж".repeat(140)],
    ] as const) {
      const quoted = (await quote(to, text)).body;
      const before = await creditOf(service, account.apiKey);
      const sent = await postJson(`${service.baseUrl}/sms`, { ...account, to, text });
      expect(sent.status).toBe(200);
      expect(sent.body.segments?.length ?? 1).toBe(quoted.parts);
      expect(micros(before) - micros(sent.body.creditRemaining)).toBe(micros(quoted.price));
    }
  });

  it("adds up to what POST /sms-batch charges", async () => {
    const messages = [
      { to: "+4915112345678", text: "a" },
      { to: "+447911123456", text: "b".repeat(200) },
      { to: "+33612345678", text: "c" },
      { to: "99912345670", text: "Ж".repeat(100) },
    ];
    let quoted = 0;
    for (const m of messages) quoted += micros((await quote(m.to, m.text)).body.price);
    const before = await creditOf(service, account.apiKey);
    const sent = await postJson(`${service.baseUrl}/sms-batch`, { ...account, messages });
    expect(sent.body).toMatchObject({ acceptedCount: 4 });
    expect(micros(before) - micros(await creditOf(service, account.apiKey))).toBe(quoted);
  });

  it("refuses what POST /sms would refuse, in the same shape", async () => {
    expect(await quote("123", "hi")).toEqual({
      status: 400,
      body: { errors: { to: [PHONE_NUMBER_ERROR] } },
    });
    expect((await quote("+4915112345678", "x".repeat(1531))).body.errors.text[0]).toMatch(
      /^text is too long/,
    );
    const missing = await getJson(
      `${service.baseUrl}/sms/quote?${new URLSearchParams({ to: "+4915112345678", ...account })}`,
    );
    expect(missing.status).toBe(400);
    expect(Object.keys(missing.body.errors)).toEqual(["text"]);
    expect((await quote("+4915112345678", "hi", { ...account, apiSecret: "wrong" })).status).toBe(
      401,
    );
  });

  it("refuses a destination priced nowhere, and takes nothing for any quote", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "quotes-")), "no-default.yaml");
    writeFileSync(path, FILE.replace("  default: 0.5\n", ""));
    const strict = await startService({ SMS_CARRIERS_FILE: path });
    try {
      const owner = await strict.createAccount({ credit: 1 });
      const query = new URLSearchParams({ to: "+33612345678", text: "hi", ...owner });
      expect(await getJson(`${strict.baseUrl}/sms/quote?${query}`)).toEqual({
        status: 400,
        body: {
          errors: {
            to: [
              "to cannot be sent to: no price is set for country FR and there is no default price",
            ],
          },
        },
      });
      expect(await creditOf(strict, owner.apiKey)).toBe(1);
      expect(await strict.store.messages.countDocuments({ accountId: owner.apiKey })).toBe(0);
    } finally {
      await strict.close();
    }
  });
});

describe("MessagingService.QuoteMessage and the Message resource", () => {
  const client = () =>
    createClient(
      MessagingService,
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    );

  it("answers in micro-units and enums, and names no carrier", async () => {
    const answer = await client().quoteMessage(
      { to: "+4915112345678", text: "hi" },
      accountCall(account),
    );
    expect(answer).toMatchObject({
      to: "+4915112345678",
      country: "DE",
      numberType: NumberType.MOBILE,
      parts: 1,
      encoding: TextEncoding.LATIN1,
      pricePerPartMicros: 90_000n,
      priceMicros: 90_000n,
    });
    const json = JSON.stringify(answer, (_, v) => (typeof v === "bigint" ? String(v) : v));
    expect(json).not.toMatch(/alpha|beta|germany|carrier|route/i);
  });

  it("GetMessage shows each message's country and price per part", async () => {
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+447911123456",
      text: "hi",
    });
    const { message } = await client().getMessage(
      { id: BigInt(sent.body.id) },
      accountCall(account),
    );
    expect(message).toMatchObject({ country: "GG", pricePerPartMicros: 60_000n });
  });
});
