/**
 * A refused status callback, through a real send (issue 25 item 2.9): with private addresses not
 * allowed (production's default), the whole service accepts a message whose callback is a host
 * name resolving to loopback, or a loopback literal, gives its notification up without a request,
 * and the attempt that GetMessage shows (and the dashboard renders) says the address is not
 * public: neither what the host resolved to nor the range it is in.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { NotificationState } from "../../gen/sms/v1/types_pb.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { eventually } from "../support/fixtures.ts";
import { type RunningService, startService } from "../support/service.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

let service: RunningService;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  service = await startService({
    SMS_RUN_WORKERS: "true",
    SMS_WEBHOOK_ALLOW_PRIVATE: "false",
    SMS_SIM_SEND_DELAY_MS: "0",
    SMS_SIM_RECEIPT_DELAY_MS: "0",
  });
});
afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

it("records that the callback address is not public, without the address or its range", async () => {
  const port = new URL(receiver.baseUrl).port;
  const account = await service.createAccount();
  const auth = {
    headers: { authorization: basicAuthorization(account.apiKey, account.apiSecret) },
  };
  const messaging = createClient(
    MessagingService,
    createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
  );
  const callbacks = [`http://localhost:${port}/hook`, `http://127.0.0.1:${port}/hook`];
  for (const statusCallback of callbacks) {
    const { message: sent } = await messaging.sendMessage(
      { to: "+4915112345678", text: "hello", statusCallback },
      auth,
    );
    const id = sent?.id ?? 0n;
    let first: NonNullable<typeof sent>["notifications"][number] | undefined;
    await eventually(async () => {
      const { message } = await messaging.getMessage({ id }, auth);
      first = message?.notifications[0];
      return first?.state === NotificationState.GAVE_UP;
    });
    expect(first?.attempts, statusCallback).toHaveLength(1);
    const error = first?.attempts[0]?.error ?? "";
    expect(error, statusCallback).toMatch(/not a public address/);
    for (const detail of ["127.0.0.1", "::1", "loopback", "localhost", "resolves"]) {
      expect(error, statusCallback).not.toContain(detail);
    }
  }
  expect(receiver.requests).toHaveLength(0);
});
