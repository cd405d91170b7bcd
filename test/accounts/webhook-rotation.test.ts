/**
 * Webhook secret rotation on a whole service with its notifier (docs/design.md "Accounts, API
 * keys and the operator console"): for SMS_WEBHOOK_SECRET_OVERLAP after a rotation, status and
 * inbound webhooks carry the new secret's signature and the old one's, so a receiver with either
 * verifies; after it, the new one's only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyWebhookSignature } from "../../src/notifier/signature.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { adminHeaders, postJson, type RunningService, startService } from "../support/service.ts";
import {
  type ReceivedRequest,
  startWebhookReceiver,
  type WebhookReceiver,
} from "../support/webhook-receiver.ts";

let database: TestDatabase;
let receiver: WebhookReceiver;
const WORKERS = {
  SMS_RUN_WORKERS: "true",
  SMS_SIM_SEND_DELAY_MS: "10",
  SMS_SIM_RECEIPT_DELAY_MS: "50",
  SMS_WEBHOOK_ALLOW_PRIVATE: "true",
};

beforeAll(async () => {
  database = await testDatabase();
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await database?.close();
});

const verifies = (secret: string, request: ReceivedRequest) =>
  verifyWebhookSignature({
    secret,
    headers: request.headers as Record<string, string>,
    pathAndQuery: request.method === "POST" ? request.body : request.pathAndQuery,
  });

async function webhooksAfterRotation(service: RunningService, path: string) {
  const account = await service.createAccount({ statusUrl: `${receiver.baseUrl}${path}/status` });
  const rotated = await postJson(`${service.baseUrl}/webhook-secret`, account);
  expect(rotated.status).toBe(200);
  const newSecret: string = rotated.body.webhookSecret;
  expect(newSecret).toMatch(/^whsec_/);
  expect(newSecret).not.toBe(account.webhookSecret);
  // An inbound message too: its webhook is a signed POST.
  const number = `+49302${String(Math.floor(Math.random() * 1e8)).padStart(8, "0")}`;
  await service.admin.assignNumber({ apiKey: account.apiKey, number }, adminHeaders);
  await service.admin.setInboundUrl(
    { apiKey: account.apiKey, inboundUrl: `${receiver.baseUrl}${path}/inbound` },
    adminHeaders,
  );
  expect(
    (await postJson(`${service.baseUrl}/sms`, { ...account, to: "+15550100200", text: "hi" }))
      .status,
  ).toBe(200);
  await service.admin.simulateInbound(
    { sender: "+4915112345678", to: number, text: "hello" },
    adminHeaders,
  );
  const mine = (requests: ReceivedRequest[]) => requests.filter((r) => r.path.startsWith(path));
  await receiver.waitFor(
    (requests) =>
      mine(requests).some((r) => r.method === "POST") &&
      mine(requests).some((r) => r.query.status === "DELIVERED"),
  );
  return { oldSecret: account.webhookSecret, newSecret, requests: mine(receiver.requests) };
}

describe("during the overlap", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService(WORKERS, database);
  });
  afterAll(() => service?.close());

  it("signs status and inbound webhooks with both secrets, the new one first", async () => {
    const { oldSecret, newSecret, requests } = await webhooksAfterRotation(service, "/overlap");
    expect(new Set(requests.map((r) => r.method))).toEqual(new Set(["GET", "POST"]));
    for (const request of requests) {
      const signatures = String(request.headers["webhook-signature"]).split(" ");
      expect(signatures).toHaveLength(2);
      expect(verifies(newSecret, request)).toBe(true);
      expect(verifies(oldSecret, request)).toBe(true);
      expect(
        verifies(newSecret, {
          ...request,
          headers: { ...request.headers, "webhook-signature": signatures[0] },
        }),
      ).toBe(true);
    }
  });
});

describe("after the overlap", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService({ ...WORKERS, SMS_WEBHOOK_SECRET_OVERLAP: "0s" }, database);
  });
  afterAll(() => service?.close());

  it("signs with the new secret only", async () => {
    const { oldSecret, newSecret, requests } = await webhooksAfterRotation(service, "/after");
    for (const request of requests) {
      expect(String(request.headers["webhook-signature"]).split(" ")).toHaveLength(1);
      expect(verifies(newSecret, request)).toBe(true);
      expect(verifies(oldSecret, request)).toBe(false);
    }
  });

  it("refuses a bad overlap setting at start, naming it", async () => {
    await expect(startService({ SMS_WEBHOOK_SECRET_OVERLAP: "forever" }, database)).rejects.toThrow(
      /SMS_WEBHOOK_SECRET_OVERLAP/,
    );
  });
});
