/**
 * GET /sms/{id} and GET /sms over real HTTP with the delivery worker and the simulator running,
 * clientRef on every door, and the status webhook's `reason` and `client_ref` parameters at a real
 * receiver (docs/design.md "Message reads, client references, scheduled sends and cancel").
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";
import { type Account, withQuery } from "./helpers.ts";

let service: RunningService;
let receiver: WebhookReceiver;
let account: Account;
let other: Account;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  service = await startService({
    SMS_RUN_WORKERS: "true",
    SMS_SIM_SEND_DELAY_MS: "5",
    SMS_SIM_RECEIPT_DELAY_MS: "20",
    SMS_WEBHOOK_ALLOW_PRIVATE: "true",
  });
  account = await service.createAccount({ credit: 1000, statusUrl: `${receiver.baseUrl}/hook` });
  other = await service.createAccount({ credit: 10 });
});
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

const read = (id: number, who: Account = account) =>
  withQuery("GET", `${service.baseUrl}/sms/${id}`, { ...who });
const list = (query: Record<string, string>, who: Account = account) =>
  withQuery("GET", `${service.baseUrl}/sms`, { ...who, ...query });

/** Waits until the message's webhooks include `status`. */
const webhookOf = async (id: number, status: string) => {
  await receiver.waitFor((rs) =>
    rs.some((r) => r.query.id === `${id}` && r.query.status === status),
  );
  return receiver.requests.find((r) => r.query.id === `${id}` && r.query.status === status);
};

describe("clientRef and GET /sms/{id}", () => {
  it("is stored, answered, read back and carried by every webhook", async () => {
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+4915112345678",
      text: "Your order shipped",
      clientRef: "order 42/ä&x",
    });
    expect(sent.status).toBe(200);
    expect(sent.body.clientRef).toBe("order 42/ä&x");
    const id = sent.body.id as number;
    const delivered = await webhookOf(id, "DELIVERED");
    expect(delivered?.pathAndQuery).toBe(
      `/hook?id=${id}&status=DELIVERED&client_ref=${encodeURIComponent("order 42/ä&x")}`,
    );
    const accepted = await webhookOf(id, "ACCEPTED");
    expect(accepted?.query.client_ref).toBe("order 42/ä&x");
    const { status, body } = await read(id);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      id,
      to: "+4915112345678",
      from: "SMSINFO",
      text: "Your order shipped",
      status: "DELIVERED",
      parts: 1,
      clientRef: "order 42/ä&x",
      price: 1,
    });
    expect(body.createTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(body.statusHistory.map((h: { status: string }) => h.status)).toEqual([
      "ACCEPTED",
      "SENT",
      "DELIVERED",
    ]);
    const times = body.statusHistory.map((h: { time: string }) => Date.parse(h.time));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  it("a DELIVERY_ERROR's webhook and read carry its reason", async () => {
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+9990000004",
      text: "full SIM",
    });
    const id = sent.body.id as number;
    const failed = await webhookOf(id, "DELIVERY_ERROR");
    expect(failed?.pathAndQuery).toBe(
      `/hook?id=${id}&status=DELIVERY_ERROR&reason=SIM%20card%20full`,
    );
    const { body } = await read(id);
    expect(body.status).toBe("DELIVERY_ERROR");
    expect(body.reason).toBe("SIM card full");
    expect(body.statusHistory.at(-1)).toMatchObject({
      status: "DELIVERY_ERROR",
      reason: "SIM card full",
    });
  });

  it("another account's message, or none, is 404 errors.id", async () => {
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+4915112345678",
      text: "x",
    });
    const theirs = await read(sent.body.id, other);
    expect(theirs.status).toBe(404);
    expect(theirs.body.errors.id).toHaveLength(1);
    expect((await read(999_999_999)).status).toBe(404);
  });

  it("refuses a clientRef over 128 characters or with a control character: 400 errors.clientRef", async () => {
    for (const clientRef of ["x".repeat(129), "a\nb", ""]) {
      const { status, body } = await postJson(`${service.baseUrl}/sms`, {
        ...account,
        to: "+4915112345678",
        text: "x",
        clientRef,
      });
      if (clientRef === "") {
        // Empty is absent, like every optional parameter.
        expect(status).toBe(200);
        expect(body.clientRef).toBeUndefined();
      } else {
        expect(status).toBe(400);
        expect(Object.keys(body.errors)).toEqual(["clientRef"]);
      }
    }
  });
});

describe("GET /sms", () => {
  it("lists newest first, filtered by clientRef, batchId and status, paged", async () => {
    const batch = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      clientRef: "campaign-7",
      messages: [
        { to: "+4915112345671", text: "a" },
        { to: "+4915112345672", text: "b", clientRef: "vip" },
        { to: "+4915112345673", text: "c" },
      ],
    });
    expect(batch.status).toBe(200);
    const byRef = await list({ clientRef: "campaign-7" });
    expect(byRef.status).toBe(200);
    expect(byRef.body.messages.map((m: { to: string }) => m.to)).toEqual([
      "+4915112345673",
      "+4915112345671",
    ]);
    for (const m of byRef.body.messages) {
      expect(m.batchId).toBe(batch.body.id);
      expect(m.statusHistory).toBeUndefined();
    }
    const vip = await list({ clientRef: "vip" });
    expect(vip.body.messages).toHaveLength(1);

    const first = await list({ batchId: `${batch.body.id}`, pageSize: "2" });
    expect(first.body.messages).toHaveLength(2);
    expect(first.body.nextPageToken).not.toBe("");
    const second = await list({
      batchId: `${batch.body.id}`,
      pageSize: "2",
      pageToken: first.body.nextPageToken,
    });
    expect(second.body.messages).toHaveLength(1);
    expect(second.body.nextPageToken).toBe("");
    const ids = [...first.body.messages, ...second.body.messages].map((m: { id: number }) => m.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));

    const failed = await list({ status: "DELIVERY_ERROR" });
    for (const m of failed.body.messages) expect(m.status).toBe("DELIVERY_ERROR");
    expect((await list({}, other)).body.messages).toEqual([]);
    expect((await list({ status: "NOPE" })).status).toBe(400);
  });

  it("since is included, until excluded", async () => {
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+4915112345678",
      text: "t",
    });
    const { body } = await read(sent.body.id);
    const at = body.createTime as string;
    const included = await list({ since: at, until: new Date(Date.parse(at) + 1).toISOString() });
    expect(included.body.messages.map((m: { id: number }) => m.id)).toContain(sent.body.id);
    const excluded = await list({ until: at });
    expect(excluded.body.messages.map((m: { id: number }) => m.id)).not.toContain(sent.body.id);
  });
});

describe("cancel's webhook, and the same over Connect", () => {
  it("a canceled message's CANCELED webhook carries its client_ref", async () => {
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+4915112345678",
      text: "later",
      clientRef: "c-1",
      sendAt: new Date(Date.now() + 600_000).toISOString(),
    });
    const canceled = await postJson(`${service.baseUrl}/sms/${sent.body.id}/cancel`, account);
    expect(canceled.body.status).toBe("CANCELED");
    const hook = await webhookOf(sent.body.id, "CANCELED");
    expect(hook?.pathAndQuery).toBe(`/hook?id=${sent.body.id}&status=CANCELED&client_ref=c-1`);
  });

  it("SendMessage with clientRef and sendAt, then CancelMessage, in Connect JSON", async () => {
    const call = async (method: string, body: unknown) => {
      const response = await fetch(`${service.baseUrl}/sms.v1.MessagingService/${method}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: basicAuthorization(account.apiKey, account.apiSecret),
        },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as any };
    };
    const sendAt = new Date(Date.now() + 600_000);
    const sent = await call("SendMessage", {
      to: "+4915112345678",
      text: "rpc",
      clientRef: "rpc-1",
      sendAt: sendAt.toISOString(),
    });
    expect(sent.status).toBe(200);
    expect(sent.body.message.clientRef).toBe("rpc-1");
    expect(Date.parse(sent.body.message.sendTime)).toBe(sendAt.getTime());
    const canceled = await call("CancelMessage", { id: sent.body.message.id });
    expect(canceled.status).toBe(200);
    expect(canceled.body.message.status).toBe("MESSAGE_STATUS_CANCELED");
    const again = await call("CancelMessage", { id: sent.body.message.id });
    expect(again.status).toBe(200);
  });
});
