/**
 * Prices by destination at acceptance (issue 27, items 3, 5 and 6), over real HTTP and Connect
 * on the test database: a message costs parts times its destination's price, creditRemaining is
 * exact, a destination priced nowhere is refused with errors.to and charged nothing, strict
 * validation refuses numbers invalid for their country, and each message keeps its route,
 * country and price.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../../gen/sms/v1/messaging_pb.ts";
import { INVALID_FOR_COUNTRY } from "../../../src/delivery/routing/routing.ts";
import { type Account, accountCall, creditOf, storedFor } from "../../rest/helpers.ts";
import { postJson, type RunningService, startService } from "../../support/service.ts";

const FILE = `carriers:
  - { name: alpha, url: simulator }
  - { name: beta, url: simulator }
routes:
  - { name: germany, match: { countries: [DE] }, carriers: [alpha, beta] }
  - { name: uk, match: { prefixes: ["+44"] }, split: { alpha: 1, beta: 1 } }
  - { name: default, carriers: [beta, alpha] }
prices:
  countries: { DE: 0.08, GB: 0.04, GG: 0.06 }
  prefixes: { "+4915": 0.09 }
`;
const GERMAN_MOBILE = "+4915112345678"; // +4915: 0.09
const GERMAN_FIXED = "+493012345678"; // DE: 0.08
const BRITISH = "+447400123456"; // GB: 0.04
const GUERNSEY = "447911123456"; // GG: 0.06, without +
const FRENCH = "+33612345678"; // no price, no default
const NO_PRICE =
  "to cannot be sent to: no price is set for country FR and there is no default price";
const THREE_PARTS = "x".repeat(153 * 2 + 1);

let service: RunningService;
let strict: RunningService;
let account: Account;
let strictAccount: Account;

beforeAll(async () => {
  const path = join(mkdtempSync(join(tmpdir(), "prices-")), "carriers.yaml");
  writeFileSync(path, FILE);
  service = await startService({ SMS_CARRIERS_FILE: path });
  strict = await startService({
    SMS_CARRIERS_FILE: path,
    SMS_NUMBER_VALIDATION: "strict",
  });
  account = await service.createAccount({ credit: 100 });
  strictAccount = await strict.createAccount({ credit: 100 });
});
afterAll(async () => {
  await service?.close();
  await strict?.close();
});

const micros = (credit: number) => Math.round(credit * 1_000_000);

describe("POST /sms", () => {
  it("charges parts times the destination's price, and answers the exact credit left", async () => {
    const before = await creditOf(service, account.apiKey);
    const one = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: GERMAN_MOBILE,
      text: "one part",
    });
    expect(one.status).toBe(200);
    expect(micros(one.body.creditRemaining)).toBe(micros(before) - 90_000);
    const three = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: GERMAN_FIXED,
      text: THREE_PARTS,
    });
    expect(three.status).toBe(200);
    expect(three.body.segments).toHaveLength(3);
    expect(micros(three.body.creditRemaining)).toBe(micros(before) - 90_000 - 3 * 80_000);
    expect(micros(await creditOf(service, account.apiKey))).toBe(
      micros(three.body.creditRemaining),
    );
  });

  it("keeps each message's route, country and price", async () => {
    const sent = await postJson(`${service.baseUrl}/sms`, { ...account, to: GUERNSEY, text: "hi" });
    expect(sent.status).toBe(200);
    const doc = await service.store.messages.findOne({ _id: sent.body.id });
    expect(doc).toMatchObject({ country: "GG", pricePerPartMicros: 60_000 });
    expect(doc?.route?.name).toBe("uk");
    expect([...(doc?.route?.carriers ?? [])].sort()).toEqual(["alpha", "beta"]);
    const german = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: GERMAN_MOBILE,
      text: "hi",
    });
    expect(await service.store.messages.findOne({ _id: german.body.id })).toMatchObject({
      route: { name: "germany", carriers: ["alpha", "beta"] },
      country: "DE",
      pricePerPartMicros: 90_000,
    });
  });

  it("refuses a destination priced nowhere with errors.to, storing and charging nothing", async () => {
    const before = await storedFor(service, account.apiKey);
    const refused = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: FRENCH,
      text: "hi",
    });
    expect(refused).toEqual({ status: 400, body: { errors: { to: [NO_PRICE] } } });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it("is INVALID_ARGUMENT on Connect, with the violation on to", async () => {
    const messaging = createClient(
      MessagingService,
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    );
    const error = await messaging
      .sendMessage({ to: FRENCH, text: "hi" }, accountCall(account))
      .catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.InvalidArgument);
    expect((error as ConnectError).rawMessage).toContain(NO_PRICE);
  });
  it("gives back what was charged when the recipient opts out before submission", async () => {
    const owner = await service.createAccount({ credit: 10 });
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...owner,
      to: GERMAN_MOBILE,
      text: "x".repeat(200),
    });
    expect(sent.status).toBe(200);
    expect(micros(sent.body.creditRemaining)).toBe(micros(10) - 2 * 90_000);
    // No worker runs here: the message waits, ACCEPTED, and the opt-out withdraws it.
    const added = await postJson(`${service.baseUrl}/opt-outs`, {
      ...owner,
      number: GERMAN_MOBILE,
    });
    expect(added.status).toBe(200);
    expect(await service.store.messages.findOne({ _id: sent.body.id })).toMatchObject({
      status: "SEND_ERROR",
    });
    expect(micros(await creditOf(service, owner.apiKey))).toBe(micros(10));
  });
});

describe("POST /sms-batch", () => {
  it("charges each message at its destination's price and refuses those priced nowhere", async () => {
    const before = await creditOf(service, account.apiKey);
    const { status, body } = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      messages: [
        { to: GERMAN_MOBILE, text: "a" },
        { to: FRENCH, text: "b" },
        { to: BRITISH, text: THREE_PARTS },
        { to: GUERNSEY, text: "d" },
        { to: GERMAN_FIXED, text: "e" },
      ],
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({
      acceptedCount: 4,
      rejectedCount: 1,
      errors: [{ index: 1, text: NO_PRICE }],
    });
    const charged = 90_000 + 3 * 40_000 + 60_000 + 80_000;
    expect(micros(await creditOf(service, account.apiKey))).toBe(micros(before) - charged);
    const stored = await service.store.messages.find({ batchId: body.id }).toArray();
    expect(stored.map((m) => [m.country, m.pricePerPartMicros]).sort()).toEqual(
      [
        ["DE", 80_000],
        ["DE", 90_000],
        ["GB", 40_000],
        ["GG", 60_000],
      ].sort(),
    );
  });

  it("a batch whose every message is priced nowhere charges nothing", async () => {
    const before = await storedFor(service, account.apiKey);
    const { status, body } = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      messages: [{ to: FRENCH, text: "a" }],
    });
    expect(status).toBe(200);
    expect(body).toMatchObject({ acceptedCount: 0, rejectedCount: 1 });
    const after = await storedFor(service, account.apiKey);
    expect(after.credit).toBe(before.credit);
    expect(after.messages).toBe(before.messages);
  });
});

describe("SMS_NUMBER_VALIDATION=strict", () => {
  it("refuses a number of the API's format that fits no plan of its country", async () => {
    const before = await storedFor(strict, strictAccount.apiKey);
    const refused = await postJson(`${strict.baseUrl}/sms`, {
      ...strictAccount,
      to: "+4900012345",
      text: "hi",
    });
    expect(refused).toEqual({ status: 400, body: { errors: { to: [INVALID_FOR_COUNTRY] } } });
    expect(await storedFor(strict, strictAccount.apiKey)).toEqual(before);
    const sent = await postJson(`${strict.baseUrl}/sms`, {
      ...strictAccount,
      to: GERMAN_MOBILE,
      text: "hi",
    });
    expect(sent.status).toBe(200);
    expect(await strict.store.messages.findOne({ _id: sent.body.id })).toMatchObject({
      numberType: "MOBILE",
    });
  });

  it("format validation (the default) takes that number", async () => {
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+4900012345",
      text: "hi",
    });
    expect(sent.status).toBe(200);
  });
});
