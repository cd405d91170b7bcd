import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { NonDeliveryReason, NotificationState } from "../../gen/sms/v1/types_pb.ts";
import { verifyWebhookSignature } from "../../src/notifier/signature.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { designedOutcome } from "../support/fixtures.ts";
import { getJson, postJson, type RunningService, startService } from "../support/service.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

// The whole service, worker and notifier included, restarted in the middle of a batch: every
// message still ends in its designed final status and every status reaches the receiver, signed.

const ENV = {
  SMS_RUN_WORKERS: "true",
  SMS_SIM_SEND_DELAY_MS: "150",
  SMS_SIM_RECEIPT_DELAY_MS: "300",
  SMS_WEBHOOK_RETRY_SCHEDULE: "200ms,400ms,800ms",
};

/** Last digits of the simulator's numbers whose outcome comes without waiting for a ttl. */
const DIGITS = ["0", "1", "2", "3", "4", "5", "6"];

const REASON_ENUM: Record<string, NonDeliveryReason> = {
  Unreachable: NonDeliveryReason.UNREACHABLE,
  Expired: NonDeliveryReason.EXPIRED,
  "SIM card full": NonDeliveryReason.SIM_CARD_FULL,
  Unroutable: NonDeliveryReason.UNROUTABLE,
  Undelivered: NonDeliveryReason.UNDELIVERED,
};

let database: TestDatabase;
let receiver: WebhookReceiver;
let service: RunningService;

beforeAll(async () => {
  database = await testDatabase();
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await service?.close();
  await receiver?.close();
  await database?.close();
});

describe("a batch through delivery and webhooks, across a restart", () => {
  it("ends with every designed final status, exact counters and every notification signed", async () => {
    service = await startService(ENV, database);
    const account = await service.createAccount({
      credit: 10_000,
      statusUrl: `${receiver.baseUrl}/hooks?source=test`,
    });
    const webhookSecret = account.webhookSecret;
    const messages = Array.from({ length: 140 }, (_, i) => ({
      to: `+9990000${String(1000 + i)}${DIGITS[i % DIGITS.length]}`,
      text: i % 10 === 0 ? "long ".repeat(40) : `message ${i}`,
    }));
    const created = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      name: "lifecycle",
      messages,
    });
    expect(created.status).toBe(200);
    expect(created.body.acceptedCount).toBe(140);
    const batchId = created.body.id;

    // Restart once some notifications arrived but before all did.
    await receiver.waitFor((requests) => requests.length >= 60, 30_000);
    await service.close();
    expect(receiver.requests.length).toBeLessThan(140 * 3);
    service = await startService(ENV, database);

    const expectedTotal = messages.reduce((n, m) => n + designedOutcome(m.to).statuses.length, 0);
    await receiver.waitFor((requests) => {
      const unique = new Set(
        requests.filter((r) => r.answered === 200).map((r) => `${r.query.id}:${r.query.status}`),
      );
      return unique.size >= expectedTotal;
    }, 60_000);

    const url = `${service.baseUrl}/sms-batch/${batchId}?apiKey=${account.apiKey}&apiSecret=${account.apiSecret}`;
    const info = (await getJson(url)).body;
    const byId = new Map<number, { to: string; status: string }>(
      info.messages.map((m: any) => [m.id, m]),
    );
    for (const message of info.messages) {
      const designed = designedOutcome(message.to).statuses;
      expect(message.status).toBe(designed.at(-1));
    }
    expect(info).toMatchObject({
      totalCount: 140,
      acceptedCount: 140,
      rejectedCount: 0,
      sentCount: 120, // every message but the 20 SEND_ERRORs
      deliveredCount: 20,
      undeliveredCount: 120,
      isActive: false,
    });

    // Every notification, in order per message, with batch_id, signed with the account's secret.
    const received = new Map<string, string[]>();
    for (const request of receiver.succeeded()) {
      expect(request.path).toBe("/hooks");
      expect(request.query.source).toBe("test");
      expect(request.query.batch_id).toBe(String(batchId));
      expect(
        verifyWebhookSignature({
          secret: webhookSecret,
          headers: request.headers,
          pathAndQuery: request.pathAndQuery,
        }),
      ).toBe(true);
      const statuses = received.get(request.query.id ?? "") ?? [];
      if (statuses.at(-1) !== request.query.status) statuses.push(request.query.status ?? "");
      received.set(request.query.id ?? "", statuses);
    }
    for (const [id, message] of byId) {
      expect(received.get(String(id))).toEqual(designedOutcome(message.to).statuses);
    }

    // The non-delivery reason and the webhook attempts are visible through GetMessage.
    const client = createClient(
      MessagingService,
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    );
    const headers = { authorization: basicAuthorization(account.apiKey, account.apiSecret) };
    for (const [id, message] of [...byId].slice(0, 7)) {
      const details = (await client.getMessage({ id: BigInt(id) }, { headers })).message;
      const reason = designedOutcome(message.to).reason;
      expect(details?.nonDeliveryReason).toBe(
        reason ? REASON_ENUM[reason] : NonDeliveryReason.UNSPECIFIED,
      );
      expect(details?.batchId).toBe(BigInt(batchId));
      expect(details?.notifications.map((n) => n.state)).toEqual(
        designedOutcome(message.to).statuses.map(() => NotificationState.DELIVERED),
      );
      expect(
        details?.notifications.every((n) => n.attempts.some((a) => a.httpStatus === 200)),
      ).toBe(true);
    }
  }, 120_000);
});
