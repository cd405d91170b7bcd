/**
 * Quiet hours over real HTTP (docs/design.md "Message reads, client references, scheduled sends
 * and cancel"): PATCH /account/quiet-hours, then sends to a Berlin number inside a window placed
 * around Berlin's present time, so the hold is certain whatever the hour the test runs at. Held
 * messages are due at the window's end with their ttl from then; OTP senders, ignoreQuietHours
 * and numbers without a country are never held.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localMinutes } from "../../src/domain/quiet-hours.ts";
import { adminHeaders, type RunningService, startService } from "../support/service.ts";
import { type Account, senderNameRequest, withQuery } from "./helpers.ts";

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

async function patch(body: Record<string, unknown>) {
  const response = await fetch(`${service.baseUrl}/account/quiet-hours`, {
    method: "PATCH",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...account, ...body }),
  });
  return { status: response.status, body: (await response.json()) as any };
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

describe("PATCH /account/quiet-hours", () => {
  it("refuses a time that is not HH:MM, equal start and end, or a missing end", async () => {
    expect((await patch({ start: "9pm", end: "08:00" })).body.errors).toHaveProperty("start");
    expect((await patch({ start: "08:00", end: "08:00" })).body.errors).toHaveProperty("end");
    expect((await patch({ start: "21:00" })).status).toBe(400);
  });

  it("holds a message due in quiet hours until they end in the recipient's zone, ttl from then", async () => {
    const local = localMinutes(new Date(), "Europe/Berlin");
    const end = hhmm(local + 60);
    const set = await patch({ start: hhmm(local - 60), end });
    expect(set).toEqual({
      status: 200,
      body: { apiKey: account.apiKey, quietHours: { start: hhmm(local - 60), end } },
    });
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
    expect(cleared).toEqual({ status: 200, body: { apiKey: account.apiKey } });
    const sent = await send({});
    expect((await read(sent.body.id)).body.holdUntil).toBeUndefined();
  });
});
