/**
 * The span of a request whose trace the service took as a root (tracing/request-span.ts): what it
 * hands the span processor, with the SDK's rules for attributes, status and ending.
 */
import { SpanKind, SpanStatusCode, TraceFlags } from "@opentelemetry/api";
import { resourceFromAttributes } from "@opentelemetry/resources";
import type { ReadableSpan, SpanProcessor } from "@opentelemetry/sdk-trace-node";
import { describe, expect, it } from "vitest";
import { RequestSpan } from "../../src/tracing/request-span.ts";
import { newRoot } from "../../src/tracing/root-sampling.ts";

function started(attributes = {}) {
  const ended: ReadableSpan[] = [];
  const processor: SpanProcessor = {
    onStart: () => undefined,
    onEnd: (span) => ended.push(span),
    forceFlush: async () => undefined,
    shutdown: async () => undefined,
  };
  const resource = resourceFromAttributes({ "service.name": "sms-test" });
  const span = new RequestSpan("POST /sms", newRoot(TraceFlags.SAMPLED), attributes, {
    processor,
    resource,
    scope: { name: "sms-service" },
  });
  return { span, ended, resource };
}

describe("a request's root span", () => {
  it("is handed to the processor once, when ended, as a sampled server span with its times", () => {
    const before = Date.now();
    const { span, ended, resource } = started({ "http.route": "/sms", empty: undefined });
    expect(span.isRecording()).toBe(true);
    span.setAttribute("http.response.status_code", 200);
    span.end();
    span.end();
    expect(ended).toEqual([span]);
    const [readable] = ended as [ReadableSpan];
    expect(readable.kind).toBe(SpanKind.SERVER);
    expect(readable.spanContext().traceFlags).toBe(TraceFlags.SAMPLED);
    expect(readable.parentSpanContext).toBeUndefined();
    expect(readable.resource).toBe(resource);
    expect(readable.attributes).toEqual({ "http.route": "/sms", "http.response.status_code": 200 });
    const ms = ([s, ns]: readonly [number, number]) => s * 1000 + ns / 1e6;
    expect(ms(readable.startTime)).toBeGreaterThanOrEqual(before - 1);
    expect(ms(readable.endTime)).toBeGreaterThanOrEqual(ms(readable.startTime));
    expect(ms(readable.duration)).toBeCloseTo(ms(readable.endTime) - ms(readable.startTime), 3);
    expect(readable.ended).toBe(true);
    expect(span.isRecording()).toBe(false);
  });

  it("changes nothing once ended", () => {
    const { span } = started();
    span.end();
    span.setAttribute("late", 1).setStatus({ code: SpanStatusCode.ERROR }).updateName("late");
    span.addEvent("late");
    expect(span.attributes).toEqual({});
    expect(span.status).toEqual({ code: SpanStatusCode.UNSET });
    expect(span.name).toBe("POST /sms");
    expect(span.events).toEqual([]);
  });

  it("keeps an error's message, drops an OK one's, and never leaves OK", () => {
    const { span } = started();
    span.setStatus({ code: SpanStatusCode.ERROR, message: "refused" });
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: "refused" });
    span.setStatus({ code: SpanStatusCode.OK, message: "ignored" });
    expect(span.status).toEqual({ code: SpanStatusCode.OK });
    span.setStatus({ code: SpanStatusCode.ERROR, message: "later" });
    expect(span.status).toEqual({ code: SpanStatusCode.OK });
  });

  it("records an exception as the specification's event", () => {
    const { span } = started();
    span.recordException(new TypeError("bad"));
    expect(span.events).toHaveLength(1);
    expect(span.events[0]).toMatchObject({
      name: "exception",
      attributes: { "exception.type": "TypeError", "exception.message": "bad" },
    });
  });
});
