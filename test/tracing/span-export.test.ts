/**
 * When a finished span leaves the service: within a fifth of a second unless OTEL_BSP_SCHEDULE_DELAY
 * says otherwise (the SDK's default, 5 s, kept every sampled span alive long enough to be promoted
 * out of the young generation, which cost the service 5-7 % of its CPU per request at a tenth
 * sampled: docs/decisions.md, "Operations: health, logs, metrics and tracing").
 */

import { expect, it } from "vitest";
import {
  otlpProtocol,
  SPAN_EXPORT_DELAY_MS,
  spanBatching,
  tracer,
} from "../../src/tracing/tracing.ts";
import { eventually } from "../support/fixtures.ts";
import { expectSpanExported, useTracingReceiver } from "../support/otlp-receiver.ts";

// No OTEL_BSP_* variable: the service's own delay.
delete process.env.OTEL_BSP_SCHEDULE_DELAY;
const tracing = useTracingReceiver();

it("a finished span is exported without waiting for the SDK's 5 s default", async () => {
  tracer().startSpan("POST /sms").end();
  // Far below the SDK's 5 s and far above 200 ms: what is checked is the delay, not the machine.
  await eventually(async () => tracing.otlp.spans.some((span) => span.name === "POST /sms"), 2_500);
  expect(tracing.otlp.spans.filter((span) => span.name === "POST /sms")).toHaveLength(1);
});

it("the batching delay is 200 ms unless OTEL_BSP_SCHEDULE_DELAY sets it", () => {
  expect(SPAN_EXPORT_DELAY_MS).toBe(200);
  expect(spanBatching({})).toEqual({ scheduledDelayMillis: 200 });
  // Set: the SDK's span processor reads the variable itself.
  expect(spanBatching({ OTEL_BSP_SCHEDULE_DELAY: "1000" })).toEqual({});
});

it("spans leave as OTLP protobuf, the specification's default, when no protocol is set", async () => {
  await expectSpanExported(tracing.otlp, "application/x-protobuf");
});

it("the encoding follows OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, then OTEL_EXPORTER_OTLP_PROTOCOL; gRPC is refused by name", () => {
  expect(otlpProtocol({})).toBe("http/protobuf");
  expect(otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })).toBe("http/json");
  expect(
    otlpProtocol({
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf",
    }),
  ).toBe("http/protobuf");
  expect(() => otlpProtocol({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })).toThrow(
    /OTEL_EXPORTER_OTLP_PROTOCOL: only "http\/protobuf" \(the default\) or "http\/json"/,
  );
});
