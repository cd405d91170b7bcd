/**
 * Quiet hours over real HTTP and Connect (docs/design.md "Message reads, client references,
 * scheduled sends and cancel"): the account's own setting, on AccountService.UpdateQuietHours and
 * PATCH /account/quiet-hours, read back with the account (GET /account, GetAccount). Sends to a
 * Berlin number inside a window placed around Berlin's present time, so the hold is certain
 * whatever the hour the test runs at. Held messages are due at the window's end with their ttl
 * from then; OTP senders, ignoreQuietHours and numbers without a country are never held.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountService } from "../../gen/sms/v1/money_pb.ts";
import { localMinutes } from "../../src/domain/quiet-hours.ts";
import { failure } from "../support/error-details.ts";
import { adminHeaders, postJson, type RunningService, startService } from "../support/service.ts";
import { type Account, accountCall, senderNameRequest, withQuery } from "./helpers.ts";

let service: RunningService;
let account: Account;
const BERLIN = "+4915112345678";

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 1000 });
});
afterAll(() => service?.close());

const hhmm = (minutes: number) => {
  const m = ((minutes % 1440) + 1440) % 1440;
  return `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`;
};

async function patch(body: Record<string, unknown>, who: Account = account) {
  const response = await fetch(`${service.baseUrl}/account/quiet-hours`, {
    method: "PATCH",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...who, ...body }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

const accountOf = (who: Account) => withQuery("GET", `${service.baseUrl}/account`, { ...who });

const accountService = () =>
  createClient(
    AccountService,
    createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
  );

/** A key of `scope` on `who`'s account. */
async function keyOf(who: Account, scope: string): Promise<Account> {
  const made = await postJson(`${service.baseUrl}/api-keys`, { ...who, name: scope, scope });
  expect(made.status).toBe(200);
  return { apiKey: made.body.apiKey, apiSecret: made.body.apiSecret };
}

const send = async (body: Record<string, unknown>) => {
  const response = await fetch(`${service.baseUrl}/sms`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...account, to: BERLIN, text: "hi", ttl: 600, ...body }),
  });
  return { status: response.status, body: (await response.json()) as any };
};
const read = (id: number) => withQuery("GET", `${service.baseUrl}/sms/${id}`, { ...account });

describe("the account's quiet hours", () => {
  it("are set, answered and read back with the account, and cleared by quietHours: null", async () => {
    const own = await service.createAccount({ credit: 1 });
    const set = await patch({ start: "21:00", end: "08:00" }, own);
    expect(set.status).toBe(200);
    const read = await accountOf(own);
    expect(read.status).toBe(200);
    // The answer is the GET /account body.
    expect(set.body).toEqual(read.body);
    expect(read.body).toMatchObject({
      apiKey: own.apiKey,
      status: "ACTIVE",
      credit: 1,
      quietHours: { start: "21:00", end: "08:00" },
    });
    const cleared = await patch({ quietHours: null }, own);
    expect(cleared.status).toBe(200);
    expect(cleared.body.apiKey).toBe(own.apiKey);
    expect(cleared.body).not.toHaveProperty("quietHours");
    expect((await accountOf(own)).body).not.toHaveProperty("quietHours");
  });

  it("a bad time is a 400 naming the field, and changes nothing", async () => {
    const own = await service.createAccount({ credit: 1 });
    expect((await patch({ start: "22:00", end: "07:00" }, own)).status).toBe(200);
    const notATime = await patch({ start: "9pm", end: "08:00" }, own);
    expect(notATime.status).toBe(400);
    expect(Object.keys(notATime.body.errors)).toEqual(["start"]);
    const late = await patch({ start: "21:00", end: "24:00" }, own);
    expect(Object.keys(late.body.errors)).toEqual(["end"]);
    const same = await patch({ start: "08:00", end: "08:00" }, own);
    expect(same.status).toBe(400);
    expect(same.body.errors).toEqual({ end: ["end must differ from start"] });
    const alone = await patch({ start: "21:00" }, own);
    expect(alone.status).toBe(400);
    expect(Object.keys(alone.body.errors)).toEqual(["end"]);
    const kind = await patch({ start: 2100, end: "08:00" }, own);
    expect(kind.status).toBe(400);
    expect(Object.keys(kind.body.errors)).toEqual(["start"]);
    expect((await accountOf(own)).body.quietHours).toEqual({ start: "22:00", end: "07:00" });
  });

  it("Connect: UpdateQuietHours answers the account, GetAccount reads them, unset clears, bad times name their path", async () => {
    const own = await service.createAccount({ credit: 1 });
    const client = accountService();
    const set = await client.updateQuietHours(
      { quietHours: { start: "20:30", end: "07:15" } },
      accountCall(own),
    );
    expect(set.account?.apiKey).toBe(own.apiKey);
    expect(set.account?.quietHours).toMatchObject({ start: "20:30", end: "07:15" });
    const read = await client.getAccount({}, accountCall(own));
    expect(read.account?.quietHours).toMatchObject({ start: "20:30", end: "07:15" });
    const bad = await failure(
      client.updateQuietHours({ quietHours: { start: "20:30", end: "7" } }, accountCall(own)),
    );
    expect(bad.code).toBe(3); // INVALID_ARGUMENT
    expect(Object.keys(bad.fields)).toEqual(["quiet_hours.end"]);
    const cleared = await client.updateQuietHours({}, accountCall(own));
    expect(cleared.account?.quietHours).toBeUndefined();
    expect((await client.getAccount({}, accountCall(own))).account?.quietHours).toBeUndefined();
  });

  it("need a key of scope full: a read key is refused on REST (403) and Connect, and reads them", async () => {
    const own = await service.createAccount({ credit: 1 });
    expect((await patch({ start: "21:00", end: "08:00" }, own)).status).toBe(200);
    const reader = await keyOf(own, "read");
    const refused = await patch({ quietHours: null }, reader);
    expect(refused.status).toBe(403);
    expect(refused.body.errors.request[0]).toMatch(/scope \(read\)/);
    const rpc = await failure(accountService().updateQuietHours({}, accountCall(reader)));
    expect(rpc.code).toBe(7); // PERMISSION_DENIED
    const read = await accountOf(reader);
    expect(read.status).toBe(200);
    expect(read.body.quietHours).toEqual({ start: "21:00", end: "08:00" });
  });

  it("holds a message due in quiet hours until they end in the recipient's zone, ttl from then", async () => {
    const local = localMinutes(new Date(), "Europe/Berlin");
    const end = hhmm(local + 60);
    const set = await patch({ start: hhmm(local - 60), end });
    expect(set.status).toBe(200);
    expect(set.body.quietHours).toEqual({ start: hhmm(local - 60), end });
    const sent = await send({});
    expect(sent.status).toBe(200);
    const { body } = await read(sent.body.id);
    expect(body.status).toBe("ACCEPTED");
    const hold = new Date(body.holdUntil);
    expect(hhmm(localMinutes(hold, "Europe/Berlin"))).toBe(end);
    const ahead = hold.getTime() - Date.parse(body.createTime);
    expect(ahead).toBeGreaterThan(58 * 60_000);
    expect(ahead).toBeLessThanOrEqual(61 * 60_000);
    const stored = await service.store.messages.findOne({ _id: sent.body.id });
    expect(stored?.deliveryAt).toEqual(hold);
    expect(stored?.expiresAt.getTime()).toBe(hold.getTime() + 600_000);
  });

  it("does not hold ignoreQuietHours, an OTP sender's messages, or a number without a country", async () => {
    const plain = await send({ ignoreQuietHours: true });
    expect((await read(plain.body.id)).body.holdUntil).toBeUndefined();
    const noCountry = await send({ to: "+9990000000" });
    expect((await read(noCountry.body.id)).body.holdUntil).toBeUndefined();
    const requested = await fetch(`${service.baseUrl}/sender_names`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...senderNameRequest("MyOTP"), purpose: "OTP", ...account }),
    });
    expect(requested.status).toBe(200);
    await service.admin.approveSenderName({ apiKey: account.apiKey, name: "MyOTP" }, adminHeaders);
    const otp = await send({ from: "MyOTP", text: "code 1234" });
    expect(otp.status).toBe(200);
    expect((await read(otp.body.id)).body.holdUntil).toBeUndefined();
  });

  it("quietHours: null clears them", async () => {
    const cleared = await patch({ quietHours: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.quietHours).toBeUndefined();
    const sent = await send({});
    expect((await read(sent.body.id)).body.holdUntil).toBeUndefined();
  });
});
