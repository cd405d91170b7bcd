/**
 * Traces (issue 16 item 4): with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, one POST /sms carrying
 * a `traceparent` yields one trace holding the request, the carrier submission and every webhook
 * attempt (DELIVERED included), exported over OTLP/HTTP to a small receiver; the webhook request
 * carries the trace's `traceparent`, and the request's log lines carry its traceId.
 */
import { randomBytes } from "node:crypto";
import { PassThrough } from "node:stream";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { SpanKind } from "@opentelemetry/api";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { accountCall } from "../rest/helpers.ts";
import { eventually } from "../support/fixtures.ts";
import { type ReceivedSpan, useTracingReceiver } from "../support/otlp-receiver.ts";
import { type RunningService, startService } from "../support/service.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

// The standard variables, as an operator sets them; the exporter reads them itself.
const tracing = useTracingReceiver({
  OTEL_BSP_SCHEDULE_DELAY: "100",
  OTEL_SERVICE_NAME: "sms-test",
});
let service: RunningService;
let receiver: WebhookReceiver;
const lines: string[] = [];

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  const logs = new PassThrough();
  logs.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
  service = await startService(
    {
      LOG_LEVEL: "info",
      SMS_RUN_WORKERS: "true",
      SMS_SIM_SEND_DELAY_MS: "20",
      SMS_SIM_RECEIPT_DELAY_MS: "50",
      SMS_WEBHOOK_ALLOW_PRIVATE: "true",
    },
    undefined,
    { logStream: logs },
  );
});

afterAll(async () => {
  await service?.close();
  await receiver?.close();
});

it("one POST /sms is one trace: the request, the carrier submission and every webhook", async () => {
  expect(tracing.stopTracing).toBeDefined();
  const account = await service.createAccount({ statusUrl: `${receiver.baseUrl}/status` });
  const traceId = randomBytes(16).toString("hex");
  const callerSpan = randomBytes(8).toString("hex");
  const response = await fetch(`${service.baseUrl}/sms`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      traceparent: `00-${traceId}-${callerSpan}-01`,
    },
    body: JSON.stringify({ ...account, to: "+4915112345678", text: "traced" }),
  });
  expect(response.status).toBe(200);
  const id = String(((await response.json()) as { id: number }).id);

  await receiver.waitFor(
    (requests) => requests.some((r) => r.query.id === id && r.query.status === "DELIVERED"),
    20_000,
  );
  // Every webhook request of the message continues the trace.
  const webhooks = receiver.requests.filter((r) => r.query.id === id);
  expect(webhooks.map((r) => r.query.status)).toEqual(["ACCEPTED", "SENT", "DELIVERED"]);
  for (const webhook of webhooks) {
    expect(String(webhook.headers.traceparent)).toMatch(
      new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`),
    );
  }

  const inTrace = () => tracing.otlp.spans.filter((span) => span.traceId === traceId);
  await eventually(async () => inTrace().filter((s) => s.name.startsWith("webhook ")).length === 3);
  const spans = inTrace();
  const request = spans.find((s) => s.name === "POST /sms");
  expect(request?.parentSpanId).toBe(callerSpan);
  expect(request?.service).toBe("sms-test");
  const submit = spans.find((s) => s.name === "carrier submit");
  expect(submit?.attributes["sms.message_id"]).toBe(Number(id));
  expect(spans.map((s) => s.name)).toEqual(
    expect.arrayContaining(["webhook ACCEPTED", "webhook SENT", "webhook DELIVERED"]),
  );
  // Each webhook request's traceparent names its own attempt's span.
  const webhookSpanIds = spans.filter((s) => s.name.startsWith("webhook ")).map((s) => s.spanId);
  for (const webhook of webhooks) {
    expect(webhookSpanIds).toContain(String(webhook.headers.traceparent).split("-")[2]);
  }
  // Every log line of the request carries its trace id, once.
  const logged = lines.map((line) => JSON.parse(line)).filter((line) => line.traceId === traceId);
  expect(logged.map((line) => line.msg)).toEqual(
    expect.arrayContaining(["incoming request", "request completed"]),
  );
  const reqId = logged[0]?.reqId;
  expect(reqId).toBeDefined();
  const ofRequest = lines.filter((line) => JSON.parse(line).reqId === reqId);
  for (const line of ofRequest) expect(line.match(/"traceId"/g), line).toHaveLength(1);
});

it("a POST /sms without a caller's trace starts one: its server span is the parent of its submission and webhooks", async () => {
  const account = await service.createAccount({ statusUrl: `${receiver.baseUrl}/status` });
  const response = await fetch(`${service.baseUrl}/sms`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...account, to: "+4915112345678", text: "a root of its own" }),
  });
  expect(response.status).toBe(200);
  const id = Number(((await response.json()) as { id: number }).id);
  await eventually(async () =>
    receiver.requests.some((r) => r.query.id === String(id) && r.query.status === "DELIVERED"),
  );
  const submitOf = () =>
    tracing.otlp.spans.find(
      (s) => s.name === "carrier submit" && s.attributes["sms.message_id"] === id,
    );
  await eventually(async () => submitOf() !== undefined);
  const submit = submitOf() as ReceivedSpan;
  const requestOf = () =>
    tracing.otlp.spans.find((s) => s.traceId === submit.traceId && s.name === "POST /sms");
  await eventually(async () => requestOf() !== undefined);
  const request = requestOf() as ReceivedSpan;
  expect(request).toMatchObject({
    parentSpanId: "",
    kind: SpanKind.SERVER + 1, // OTLP counts from UNSPECIFIED = 0
    attributes: {
      "http.request.method": "POST",
      "http.route": "/sms",
      "http.response.status_code": 200,
    },
    service: "sms-test",
  });
  expect(submit.parentSpanId).toBe(request.spanId);
  const webhook = receiver.requests.find(
    (r) => r.query.id === String(id) && r.query.status === "DELIVERED",
  );
  // A sampled trace: the receiver may record it too.
  expect(String(webhook?.headers.traceparent)).toMatch(
    new RegExp(`^00-${request.traceId}-[0-9a-f]{16}-01$`),
  );
});

it("a Connect call on PORT is one span, its request's, naming the procedure", async () => {
  const account = await service.createAccount({});
  const traceId = randomBytes(16).toString("hex");
  const callerSpan = randomBytes(8).toString("hex");
  const client = createClient(
    MessagingService,
    createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
  );
  await client.sendMessage(
    { to: "+4915112345678", text: "traced over Connect on PORT" },
    {
      headers: {
        ...accountCall(account).headers,
        traceparent: `00-${traceId}-${callerSpan}-01`,
      },
    },
  );
  const procedure = "sms.v1.MessagingService/SendMessage";
  await eventually(async () =>
    tracing.otlp.spans.some((s) => s.traceId === traceId && s.name === `POST /${procedure}`),
  );
  const serverSpans = tracing.otlp.spans.filter(
    (s) => s.traceId === traceId && s.parentSpanId === callerSpan,
  );
  expect(serverSpans.map((s) => s.name)).toEqual([`POST /${procedure}`]);
  expect(serverSpans[0]?.attributes["rpc.method"]).toBe(procedure);
  expect(tracing.otlp.spans.filter((s) => s.traceId === traceId && s.name === procedure)).toEqual(
    [],
  );
});

it("a Connect call over HTTP/2 (GRPC_PORT) continues the caller's trace, and so does its message", async () => {
  const account = await service.createAccount({ statusUrl: `${receiver.baseUrl}/status` });
  const traceId = randomBytes(16).toString("hex");
  const callerSpan = randomBytes(8).toString("hex");
  const client = createClient(
    MessagingService,
    createConnectTransport({ baseUrl: service.grpcUrl, httpVersion: "2" }),
  );
  const answer = await client.sendMessage(
    { to: "+4915112345678", text: "traced over h2" },
    {
      headers: {
        ...accountCall(account).headers,
        traceparent: `00-${traceId}-${callerSpan}-01`,
      },
    },
  );
  const id = String(answer.message?.id);
  await eventually(async () =>
    tracing.otlp.spans.some((s) => s.traceId === traceId && s.name === "webhook DELIVERED"),
  );
  const call = tracing.otlp.spans.find(
    (s) => s.traceId === traceId && s.name === "sms.v1.MessagingService/SendMessage",
  );
  expect(call?.parentSpanId).toBe(callerSpan);
  expect(
    tracing.otlp.spans.some(
      (s) =>
        s.traceId === traceId &&
        s.name === "carrier submit" &&
        String(s.attributes["sms.message_id"]) === id,
    ),
  ).toBe(true);
});
