/**
 * What a message keeps of the trace that accepted it: 25 bytes in its document, from which its
 * delivery and webhooks continue that trace; headers when the trace has a tracestate; and the
 * headers that documents written before still hold.
 */
import { context, createTraceState, ROOT_CONTEXT, TraceFlags, trace } from "@opentelemetry/api";
import { Binary, BSON } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  contextOf,
  currentTraceCarrier,
  type StoredTrace,
  startTracing,
  tracer,
} from "../../src/tracing/tracing.ts";

let stopTracing: (() => Promise<void>) | undefined;

beforeAll(() => {
  // No span is ended, so nothing is exported to this closed port.
  stopTracing = startTracing({
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:9/v1/traces",
  });
});

afterAll(async () => {
  await stopTracing?.();
});

/** Stores the active trace as a message document would, through BSON and back. */
function storedWithin(parent: ReturnType<typeof trace.setSpan>): StoredTrace | undefined {
  const stored = context.with(parent, () => currentTraceCarrier());
  if (stored === undefined) return undefined;
  return BSON.deserialize(BSON.serialize({ traceContext: stored })).traceContext as StoredTrace;
}

it("a message keeps its request's trace in 25 bytes and continues that trace from them", () => {
  const span = tracer().startSpan("POST /sms");
  const stored = storedWithin(trace.setSpan(ROOT_CONTEXT, span));
  expect(stored).toBeInstanceOf(Binary);
  expect((stored as Binary).length()).toBe(25);
  expect(trace.getSpanContext(contextOf(stored))).toEqual({
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
  });
});

it("an unsampled trace stays unsampled in its message's later spans", () => {
  const parent = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: "0af7651916cd43dd8448eb211c80319c",
    spanId: "b7ad6b7169203331",
    traceFlags: TraceFlags.NONE,
    isRemote: true,
  });
  const stored = storedWithin(parent);
  expect(trace.getSpanContext(contextOf(stored))?.traceFlags).toBe(TraceFlags.NONE);
  expect(trace.getSpanContext(contextOf(stored))?.traceId).toBe("0af7651916cd43dd8448eb211c80319c");
});

it("a trace with a tracestate is kept as W3C headers, tracestate included", () => {
  const parent = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    spanId: "00f067aa0ba902b7",
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: createTraceState("vendor=abc"),
  });
  const stored = storedWithin(parent);
  expect(stored).toEqual({
    traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    tracestate: "vendor=abc",
  });
  expect(trace.getSpanContext(contextOf(stored))?.traceState?.get("vendor")).toBe("abc");
});

it("documents that hold the trace as headers still continue it", () => {
  const restored = trace.getSpanContext(
    contextOf({ traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" }),
  );
  expect(restored).toMatchObject({
    traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
    spanId: "00f067aa0ba902b7",
  });
});

it("no trace without an active span, and none continued from nothing", () => {
  expect(context.with(ROOT_CONTEXT, () => currentTraceCarrier())).toBeUndefined();
  expect(trace.getSpanContext(contextOf(undefined))).toBeUndefined();
});
