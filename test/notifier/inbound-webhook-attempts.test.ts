/**
 * An inbound message's webhook attempts, read as a message's status webhooks are (issue 26,
 * item 4 with GetMessage's history): REST GET /inbound/{id} and InboundService.GetInboundMessage
 * answer its state, URL and every attempt (time, HTTP status or error), ListInboundMessages leaves
 * them out. The whole service runs (simulator carrier, notifier), inbound messages come through
 * AdminService.SimulateInbound and their webhooks go to a real receiver on loopback: one that
 * fails the first request, and, with private addresses refused, one whose address is not public.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InboundService } from "../../gen/sms/v1/inbound_pb.ts";
import { NotificationState } from "../../gen/sms/v1/types_pb.ts";
import { inboundMessagesCollection } from "../../src/store/inbound-messages.ts";
import { type Account, accountCall } from "../rest/helpers.ts";
import { eventually } from "../support/fixtures.ts";
import { adminHeaders, getJson, type RunningService, startService } from "../support/service.ts";
import {
  failingOncePerWebhook,
  startWebhookReceiver,
  type WebhookReceiver,
} from "../support/webhook-receiver.ts";

const ENV = {
  SMS_RUN_WORKERS: "true",
  SMS_SIM_SEND_DELAY_MS: "0",
  SMS_SIM_RECEIPT_DELAY_MS: "0",
  SMS_WEBHOOK_RETRY_SCHEDULE: "200ms,400ms,800ms",
};

let receiver: WebhookReceiver;
beforeAll(async () => {
  // Each webhook's first request fails with 500; its retry gets 200.
  receiver = await startWebhookReceiver({ respond: failingOncePerWebhook() });
});
afterAll(() => receiver?.close());

/** An account owning `number`, its inbound URL on the receiver, and a message from a handset. */
async function inboundWithWebhook(
  service: RunningService,
  number: string,
): Promise<{ account: Account; id: bigint }> {
  const account = await service.createAccount();
  await service.admin.assignNumber({ apiKey: account.apiKey, number }, adminHeaders);
  await service.admin.setInboundUrl(
    { apiKey: account.apiKey, inboundUrl: `${receiver.baseUrl}/inbound` },
    adminHeaders,
  );
  const { inboundMessage } = await service.admin.simulateInbound(
    { sender: "+4917012340000", to: number, text: "Is it on its way?" },
    adminHeaders,
  );
  const id = inboundMessage?.id ?? 0n;
  // Final once the receiver answered 2xx, or the address was refused.
  await eventually(async () => {
    const doc = await inboundMessagesCollection(service.store.db).findOne({ _id: Number(id) });
    return doc?.webhook?.state === "delivered" || doc?.webhook?.state === "gave_up";
  });
  return { account, id };
}

const inboundClient = (service: RunningService) =>
  createClient(
    InboundService,
    createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
  );

const restQuery = (who: Account) => new URLSearchParams({ ...who }).toString();

describe("a receiver that answers 500, then 200", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService(ENV);
  });
  afterAll(() => service?.close());

  it("GET /inbound/{id} shows the webhook's state, URL and both attempts", async () => {
    const { account, id } = await inboundWithWebhook(service, "+4930555201");
    const res = await getJson(`${service.baseUrl}/inbound/${id}?${restQuery(account)}`);
    expect(res.status).toBe(200);
    const webhook = res.body.webhook;
    expect(webhook).toMatchObject({ state: "DELIVERED", url: `${receiver.baseUrl}/inbound` });
    expect(webhook.nextAttemptAt).toBeUndefined();
    expect(
      webhook.attempts.map((a: { httpStatus: number; error?: string }) => [
        a.httpStatus,
        a.error !== undefined,
      ]),
    ).toEqual([
      [500, true],
      [200, false],
    ]);
    for (const attempt of webhook.attempts) {
      expect(Date.parse(attempt.at)).not.toBeNaN();
      expect(attempt.durationMs).toBeGreaterThanOrEqual(0);
    }
    // The list keeps the design's shape: no webhook.
    const listed = await getJson(`${service.baseUrl}/inbound?${restQuery(account)}`);
    expect(listed.body.inbound).toHaveLength(1);
    expect(listed.body.inbound[0].webhook).toBeUndefined();
  });

  it("GetInboundMessage answers the same over Connect; ListInboundMessages leaves it out", async () => {
    const { account, id } = await inboundWithWebhook(service, "+4930555202");
    const inbound = inboundClient(service);
    const { inboundMessage } = await inbound.getInboundMessage({ id }, accountCall(account));
    const webhook = inboundMessage?.webhook;
    expect(webhook?.state).toBe(NotificationState.DELIVERED);
    expect(webhook?.url).toBe(`${receiver.baseUrl}/inbound`);
    expect(webhook?.attempts.map((a) => a.httpStatus)).toEqual([500, 200]);
    expect(webhook?.attempts[0]?.error).not.toBe("");
    expect(webhook?.attempts[1]?.error).toBe("");
    expect(webhook?.attempts.every((a) => a.attemptTime !== undefined)).toBe(true);
    const listed = await inbound.listInboundMessages({}, accountCall(account));
    expect(listed.inboundMessages.map((m) => [m.id, m.webhook])).toEqual([[id, undefined]]);
  });

  it("has no webhook for a message that came while the account had no inbound URL", async () => {
    const account = await service.createAccount();
    const number = "+4930555203";
    await service.admin.assignNumber({ apiKey: account.apiKey, number }, adminHeaders);
    const { inboundMessage } = await service.admin.simulateInbound(
      { sender: "+4917012340001", to: number, text: "hello" },
      adminHeaders,
    );
    const id = inboundMessage?.id ?? 0n;
    const res = await getJson(`${service.baseUrl}/inbound/${id}?${restQuery(account)}`);
    expect(res.status).toBe(200);
    expect(res.body.webhook).toBeUndefined();
    const got = await inboundClient(service).getInboundMessage({ id }, accountCall(account));
    expect(got.inboundMessage?.webhook).toBeUndefined();
  });
});

describe("an inbound URL whose address is not public (SMS_WEBHOOK_ALLOW_PRIVATE=false)", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService({ ...ENV, SMS_WEBHOOK_ALLOW_PRIVATE: "false" });
  });
  afterAll(() => service?.close());

  it("shows the refused attempt over REST and Connect, worded as for status webhooks", async () => {
    const before = receiver.requests.length;
    const { account, id } = await inboundWithWebhook(service, "+4930555204");
    const res = await getJson(`${service.baseUrl}/inbound/${id}?${restQuery(account)}`);
    expect(res.body.webhook).toMatchObject({
      state: "GAVE_UP",
      url: `${receiver.baseUrl}/inbound`,
    });
    expect(res.body.webhook.attempts).toHaveLength(1);
    expect(res.body.webhook.attempts[0]).toMatchObject({ httpStatus: 0 });
    expect(res.body.webhook.attempts[0].error).toMatch(/not a public address/);
    // Neither the address nor its range is told.
    expect(res.body.webhook.attempts[0].error).not.toMatch(/127\.0\.0\.1|loopback/);

    const { inboundMessage } = await inboundClient(service).getInboundMessage(
      { id },
      accountCall(account),
    );
    expect(inboundMessage?.webhook?.state).toBe(NotificationState.GAVE_UP);
    expect(inboundMessage?.webhook?.attempts.map((a) => [a.httpStatus, a.error])).toEqual([
      [0, res.body.webhook.attempts[0].error],
    ]);
    expect(receiver.requests.length).toBe(before);
  });
});
