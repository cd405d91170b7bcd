/**
 * Money through REST and Connect (docs/design.md "Money: what is charged, the ledger, usage and
 * spend controls"): what no carrier took is refunded; the ledger explains the balance; usage is
 * kept by day and country, as JSON and CSV; the account's spend controls refuse what they must,
 * store and charge nothing, and name the field.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { AccountService, UsageGroup, UsageService } from "../../gen/sms/v1/money_pb.ts";
import { type Account, accountCall, creditOf } from "../rest/helpers.ts";
import { failure } from "../support/error-details.ts";
import { eventually } from "../support/fixtures.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";

let service: RunningService;
beforeAll(async () => {
  // The simulator answers by number: +999…1 is refused by the carrier (SEND_ERROR).
  service = await startService({
    SMS_RUN_WORKERS: "true",
    SMS_SIM_SEND_DELAY_MS: "0",
    SMS_SIM_RECEIPT_DELAY_MS: "0",
    SMS_RATE_LIMIT_RPS: "0",
  });
});
afterAll(() => service?.close());

const REFUSED_BY_CARRIER = "+9991234561";
const GERMAN = "+4915112345678";

const get = async (
  path: string,
  account: Account,
  query: Record<string, string> = {},
  accept?: string,
) => {
  const response = await fetch(
    `${service.baseUrl}${path}?${new URLSearchParams({ ...account, ...query })}`,
    accept ? { headers: { accept } } : {},
  );
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  return { status: response.status, type, body: type.includes("json") ? JSON.parse(text) : text };
};

const patch = async (account: Account, body: object) => {
  const response = await fetch(`${service.baseUrl}/account/spend-controls`, {
    method: "PATCH",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...account, ...body }),
  });
  return { status: response.status, body: (await response.json()) as any };
};

const send = (account: Account, to: string, text = "hello") =>
  postJson(`${service.baseUrl}/sms`, { ...account, to, text });

function clients() {
  const transport = createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" });
  return {
    messaging: createClient(MessagingService, transport),
    usage: createClient(UsageService, transport),
    account: createClient(AccountService, transport),
  };
}

describe("refunds and the ledger", () => {
  it("a message no carrier took is refunded once; the ledger explains the balance", async () => {
    const account = await service.createAccount({ credit: 10 });
    expect((await send(account, REFUSED_BY_CARRIER)).status).toBe(200);
    expect((await send(account, GERMAN)).status).toBe(200);
    await eventually(async () => (await creditOf(service, account.apiKey)) === 9);

    const ledger = await get("/ledger", account);
    expect(ledger.status).toBe(200);
    const kinds = ledger.body.entries.map((e: any) => [e.kind, e.amount]).sort();
    expect(kinds).toEqual([
      ["CHARGE", -1],
      ["CHARGE", -1],
      ["REFUND", 1],
    ]);
    const sum = ledger.body.entries.reduce((s: number, e: any) => s + e.amount, 0);
    expect(10 + sum).toBe(9);
    const fetched = await get("/account", account);
    expect(fetched.body).toMatchObject({ credit: 9, status: "ACTIVE" });
    expect(fetched.body.spendControls).toEqual({ allowedCountries: [], spentToday: 1 });
  });

  it("the ledger pages, and a bad range or token is a 400 naming the parameter", async () => {
    const account = await service.createAccount({ credit: 10 });
    for (let i = 0; i < 3; i++) expect((await send(account, GERMAN)).status).toBe(200);
    await eventually(async () => (await get("/ledger", account)).body.entries.length === 3);
    const first = await get("/ledger", account, { pageSize: "2" });
    expect(first.body.entries).toHaveLength(2);
    const second = await get("/ledger", account, {
      pageSize: "2",
      pageToken: first.body.nextPageToken,
    });
    expect(second.body.entries).toHaveLength(1);
    expect(second.body.nextPageToken).toBe("");
    expect((await get("/ledger", account, { since: "yesterday" })).body.errors.since).toBeDefined();
    expect((await get("/ledger", account, { pageToken: "nonsense" })).status).toBe(400);
  });
});

describe("usage", () => {
  it("is kept per day and country as charged and refunded, as JSON and as CSV", async () => {
    const account = await service.createAccount({ credit: 10 });
    expect((await send(account, GERMAN)).status).toBe(200);
    expect((await send(account, "+33612345678", "x".repeat(200))).status).toBe(200);
    expect((await send(account, REFUSED_BY_CARRIER)).status).toBe(200);
    await eventually(async () => (await creditOf(service, account.apiKey)) === 7);
    const today = new Date().toISOString().slice(0, 10);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const range = { since: today, until: tomorrow };

    await eventually(async () => (await get("/usage", account, range)).body.rows[0].messages === 3);
    const byCountry = await get("/usage", account, { ...range, groupBy: "day,country" });
    expect(byCountry.body.rows).toEqual([
      { day: today, country: "DE", messages: 1, parts: 1, charged: 1, refunded: 0 },
      { day: today, country: "FR", messages: 1, parts: 2, charged: 2, refunded: 0 },
      { day: today, country: "ZZ", messages: 1, parts: 1, charged: 1, refunded: 1 },
    ]);
    const csv = await get("/usage", account, { ...range, groupBy: "country" }, "text/csv");
    expect(csv.status).toBe(200);
    expect(csv.type).toContain("text/csv");
    expect(csv.body).toBe(
      "country,messages,parts,charged,refunded\r\nDE,1,1,1,0\r\nFR,1,2,2,0\r\nZZ,1,1,1,1\r\n",
    );
    // A range with nothing in it is the header row alone.
    const empty = await get(
      "/usage",
      account,
      { since: "2026-01-01", until: "2026-01-02", groupBy: "day" },
      "text/csv",
    );
    expect(empty.body).toBe("day,messages,parts,charged,refunded\r\n");

    const rows = await clients().usage.getUsage(
      { startDate: today, endDate: tomorrow, groupBy: [UsageGroup.COUNTRY] },
      accountCall(account),
    );
    expect(rows.rows.map((r) => [r.country, Number(r.chargedMicros)])).toEqual([
      ["DE", 1_000_000],
      ["FR", 2_000_000],
      ["ZZ", 1_000_000],
    ]);
  });

  it("refuses bad dates and groupings with a 400 naming the parameter", async () => {
    const account = await service.createAccount({ credit: 1 });
    const bad = await get("/usage", account, { since: "2026-13-01", until: "2026-12-01" });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.since).toBeDefined();
    const reversed = await get("/usage", account, { since: "2026-12-01", until: "2026-11-01" });
    expect(reversed.body.errors.until).toBeDefined();
    const grouping = await get("/usage", account, {
      since: "2026-11-01",
      until: "2026-12-01",
      groupBy: "status",
    });
    expect(grouping.body.errors.groupBy).toBeDefined();
  });
});

describe("spend controls", () => {
  it("allowed countries refuse a send elsewhere with 400 errors.to and a batch entry by index; nothing stored or charged", async () => {
    const account = await service.createAccount({ credit: 10 });
    const set = await patch(account, { allowedCountries: ["DE"] });
    expect(set.status).toBe(200);
    expect(set.body.spendControls.allowedCountries).toEqual(["DE"]);

    const refused = await send(account, "+33612345678");
    expect(refused.status).toBe(400);
    expect(refused.body.errors.to[0]).toContain("FR");
    const simulator = await send(account, "+9991234560");
    expect(simulator.body.errors.to[0]).toContain("ZZ");

    const batch = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      messages: [
        { to: GERMAN, text: "a" },
        { to: "+33612345678", text: "b" },
      ],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.acceptedCount).toBe(1);
    expect(batch.body.errors.map((e: any) => e.index)).toEqual([1]);
    expect(await creditOf(service, account.apiKey)).toBe(9);

    const rpc = await failure(
      clients().messaging.sendMessage({ to: "+33612345678", text: "c" }, accountCall(account)),
    );
    expect(rpc.reason).toBe("COUNTRY_NOT_ALLOWED");
    expect(rpc.code).toBe(9); // FAILED_PRECONDITION
  });

  it("the price ceiling refuses a message that costs more, naming its price and the limit", async () => {
    const account = await service.createAccount({ credit: 10 });
    expect((await patch(account, { maxPricePerMessage: 1.5 })).status).toBe(200);
    const refused = await send(account, GERMAN, "x".repeat(200));
    expect(refused.status).toBe(400);
    expect(refused.body.errors.to[0]).toMatch(/costs 2.*1\.5/);
    expect((await send(account, GERMAN, "short")).status).toBe(200);
    const rpc = await failure(
      clients().messaging.sendMessage({ to: GERMAN, text: "y".repeat(200) }, accountCall(account)),
    );
    expect(rpc.reason).toBe("PRICE_ABOVE_LIMIT");
    // null clears it.
    const cleared = await patch(account, { maxPricePerMessage: null });
    expect(cleared.body.spendControls.maxPricePerMessage).toBeUndefined();
    expect((await send(account, GERMAN, "x".repeat(200))).status).toBe(200);
  });

  it("the daily limit refuses a send that would pass it with 402, whole batches too, and concurrent sends never overshoot", async () => {
    const account = await service.createAccount({ credit: 100 });
    expect((await patch(account, { dailySpendLimit: 5 })).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 12 }, () => send(account, GERMAN)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(5);
    const refused = answers.find((a) => a.status === 402);
    expect(refused?.body.errors.request[0]).toContain("dailySpendLimit");
    expect(await creditOf(service, account.apiKey)).toBe(95);

    const batch = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      messages: [{ to: GERMAN, text: "a" }],
    });
    expect(batch.status).toBe(402);
    expect(typeof batch.body.errors.request).toBe("string");
    const rpc = await failure(
      clients().messaging.sendMessage({ to: GERMAN, text: "b" }, accountCall(account)),
    );
    expect(rpc.reason).toBe("DAILY_SPEND_LIMIT");
    expect((await get("/account", account)).body.spendControls).toMatchObject({
      dailySpendLimit: 5,
      spentToday: 5,
    });
    expect(await creditOf(service, account.apiKey)).toBe(95);
  });

  it("a refund of today's charge gives room today", async () => {
    const account = await service.createAccount({ credit: 100 });
    expect((await patch(account, { dailySpendLimit: 1 })).status).toBe(200);
    expect((await send(account, REFUSED_BY_CARRIER)).status).toBe(200);
    await eventually(async () => (await creditOf(service, account.apiKey)) === 100);
    expect((await send(account, GERMAN)).status).toBe(200);
  });

  it("bad values are 400s naming the field; Connect takes an update mask", async () => {
    const account = await service.createAccount({ credit: 1 });
    const countries = await patch(account, { allowedCountries: ["germany"] });
    expect(countries.status).toBe(400);
    expect(countries.body.errors.allowedCountries).toBeDefined();
    const limit = await patch(account, { dailySpendLimit: -1 });
    expect(limit.status).toBe(400);
    expect(Object.keys(limit.body.errors)).toEqual(["dailySpendLimit"]);
    const kind = await patch(account, { maxPricePerMessage: "lots" });
    expect(kind.status).toBe(400);

    const { account: view } = await clients().account.updateSpendControls(
      {
        spendControls: { allowedCountries: ["DE", "FR"], dailySpendLimitMicros: 3_000_000n },
        updateMask: ["allowed_countries", "daily_spend_limit_micros"],
      },
      accountCall(account),
    );
    expect(view?.spendControls?.allowedCountries).toEqual(["DE", "FR"]);
    expect(view?.spendControls?.dailySpendLimitMicros).toBe(3_000_000n);
    const mask = await failure(
      clients().account.updateSpendControls({ updateMask: ["credit"] }, accountCall(account)),
    );
    expect(Object.keys(mask.fields)).toEqual(["update_mask"]);
  });
});
