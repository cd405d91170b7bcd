/**
 * OTLP over HTTP with JSON, for a collector that asks for it (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=
 * http/json): the same span as in protobuf (span-export.test.ts), in the other encoding.
 */
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTracing, tracer } from "../../src/tracing/tracing.ts";
import { eventually } from "../support/fixtures.ts";
import { type OtlpReceiver, startOtlpReceiver } from "../support/otlp-receiver.ts";

let otlp: OtlpReceiver;
let stopTracing: (() => Promise<void>) | undefined;

beforeAll(async () => {
  otlp = await startOtlpReceiver();
  // As an operator sets them: the exporter reads its endpoint from the process's environment.
  process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = otlp.tracesUrl;
  process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = "http/json";
  stopTracing = startTracing(process.env);
});

afterAll(async () => {
  await stopTracing?.();
  await otlp?.close();
  delete process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  delete process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL;
});

it("spans leave as OTLP JSON when the protocol variable says http/json", async () => {
  const span = tracer().startSpan("webhook SENT", {
    kind: SpanKind.CLIENT,
    attributes: { "sms.status": "SENT", "sms.message_id": 7 },
  });
  span.setStatus({ code: SpanStatusCode.ERROR, message: "503" });
  span.end();
  await eventually(async () => otlp.spans.some((s) => s.name === "webhook SENT"), 2_500);
  expect(otlp.spans.find((s) => s.name === "webhook SENT")).toMatchObject({
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    kind: SpanKind.CLIENT + 1,
    attributes: { "sms.status": "SENT", "sms.message_id": 7 },
    status: { code: SpanStatusCode.ERROR, message: "503" },
  });
  expect(new Set(otlp.encodings)).toEqual(new Set(["application/json"]));
});
