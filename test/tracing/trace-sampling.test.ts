/**
 * Trace sampling as production runs it (README, "Production"): the standard
 * OTEL_TRACES_SAMPLER=parentbased_traceidratio with OTEL_TRACES_SAMPLER_ARG, read by the
 * OpenTelemetry SDK. At a ratio of 0 the service exports no trace that starts with it, neither
 * the request's span nor its message's carrier submission and webhooks, whose requests still carry
 * the unsampled trace's `traceparent`; a caller's sampled `traceparent` is followed whole.
 */
import { randomBytes } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { accountCall } from "../rest/helpers.ts";
import { eventually } from "../support/fixtures.ts";
import { useTracingReceiver } from "../support/otlp-receiver.ts";
import { type RunningService, startService } from "../support/service.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

const tracing = useTracingReceiver({
  OTEL_BSP_SCHEDULE_DELAY: "100",
  OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
  OTEL_TRACES_SAMPLER_ARG: "0",
});
let service: RunningService;
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  service = await startService({
    SMS_RUN_WORKERS: "true",
    SMS_SIM_SEND_DELAY_MS: "20",
    SMS_SIM_RECEIPT_DELAY_MS: "50",
    SMS_WEBHOOK_ALLOW_PRIVATE: "true",
  });
});

afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

async function send(
  account: { apiKey: string; apiSecret: string },
  traceparent?: string,
): Promise<string> {
  const response = await fetch(`${service.baseUrl}/sms`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(traceparent && { traceparent }) },
    body: JSON.stringify({ ...account, to: "+4915112345678", text: "sampled or not" }),
  });
  expect(response.status).toBe(200);
  return String(((await response.json()) as { id: number }).id);
}

/** A Connect call on PORT: the request's span and the call's, both of one unsampled trace. */
async function sendOverConnect(account: { apiKey: string; apiSecret: string }): Promise<string> {
  const client = createClient(
    MessagingService,
    createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
  );
  const answer = await client.sendMessage(
    { to: "+4915112345678", text: "sampled or not, over Connect" },
    accountCall(account),
  );
  return String(answer.message?.id);
}

it("a ratio of 0 exports none of its own traces, and follows a caller's sampled one whole", async () => {
  expect(tracing.stopTracing).toBeDefined();
  const account = await service.createAccount({ statusUrl: `${receiver.baseUrl}/status` });
  const unsampled = await Promise.all([
    ...Array.from({ length: 10 }, () => send(account)),
    ...Array.from({ length: 5 }, () => sendOverConnect(account)),
  ]);
  const delivered = (id: string) => () =>
    receiver.requests.some((r) => r.query.id === id && r.query.status === "DELIVERED");
  for (const id of unsampled) await receiver.waitFor(delivered(id), 20_000);

  const traceId = randomBytes(16).toString("hex");
  const callerSpan = randomBytes(8).toString("hex");
  const sampled = await send(account, `00-${traceId}-${callerSpan}-01`);
  await receiver.waitFor(delivered(sampled), 20_000);
  // The spans are exported in the order they ended: once the sampled trace's last webhook span
  // is in, every span of the unsampled messages' work would be in too.
  await eventually(async () =>
    tracing.otlp.spans.some((s) => s.traceId === traceId && s.name === "webhook DELIVERED"),
  );
  expect(tracing.otlp.spans.filter((s) => s.traceId !== traceId)).toEqual([]);
  expect(tracing.otlp.spans.find((s) => s.name === "POST /sms")?.parentSpanId).toBe(callerSpan);
  expect(tracing.otlp.spans.map((s) => s.name)).toEqual(
    expect.arrayContaining(["carrier submit", "webhook ACCEPTED", "webhook SENT"]),
  );

  // The unsampled messages' webhooks still carry their trace, marked not sampled (flags 00).
  for (const id of unsampled) {
    const webhooks = receiver.requests.filter((r) => r.query.id === id);
    expect(webhooks).toHaveLength(3);
    for (const webhook of webhooks) {
      expect(String(webhook.headers.traceparent)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    }
  }
});
