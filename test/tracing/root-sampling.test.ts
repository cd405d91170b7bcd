/**
 * Which traces are recorded (tracing/root-sampling.ts): the standard OTEL_TRACES_SAMPLER and
 * OTEL_TRACES_SAMPLER_ARG, read once at start; a request without a caller's trace is decided
 * before any span is made, everything else by the standard sampler those variables name.
 */
import { isSpanContextValid, ROOT_CONTEXT, SpanKind, TraceFlags, trace } from "@opentelemetry/api";
import { SamplingDecision } from "@opentelemetry/sdk-trace-node";
import { describe, expect, it } from "vitest";
import {
  newRoot,
  sampleRoot,
  samplingFromEnv,
  unsampledRoot,
} from "../../src/tracing/root-sampling.ts";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";

function decide(env: NodeJS.ProcessEnv, parent = ROOT_CONTEXT) {
  return samplingFromEnv(env).sampler.shouldSample(
    parent,
    TRACE_ID,
    "POST /sms",
    SpanKind.SERVER,
    {},
    [],
  ).decision;
}

const remoteParent = (flags: TraceFlags) =>
  trace.setSpanContext(ROOT_CONTEXT, {
    traceId: TRACE_ID,
    spanId: "00f067aa0ba902b7",
    traceFlags: flags,
    isRemote: true,
  });

describe("the sampler variables", () => {
  it("read as the specification says, parent-based always on when unset", () => {
    expect(samplingFromEnv({}).rootRatio).toBe(1);
    expect(samplingFromEnv({ OTEL_TRACES_SAMPLER: "always_off" }).rootRatio).toBe(0);
    expect(samplingFromEnv({ OTEL_TRACES_SAMPLER: "parentbased_always_off" }).rootRatio).toBe(0);
    expect(
      samplingFromEnv({
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0.1",
      }).rootRatio,
    ).toBe(0.1);
    // A ratio sampler without its argument records every root.
    expect(samplingFromEnv({ OTEL_TRACES_SAMPLER: "traceidratio" }).rootRatio).toBe(1);
  });

  it("stop the start with the variable named when they ask for no standard sampler", () => {
    expect(() => samplingFromEnv({ OTEL_TRACES_SAMPLER: "jaeger_remote" })).toThrow(
      /^OTEL_TRACES_SAMPLER: "jaeger_remote"/,
    );
    for (const arg of ["1.5", "-0.1", "a tenth"]) {
      expect(() =>
        samplingFromEnv({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: arg }),
      ).toThrow(/^OTEL_TRACES_SAMPLER_ARG/);
    }
  });
});

describe("the SDK's sampler", () => {
  const production = {
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: "0",
  };

  it("takes its roots (a call on GRPC_PORT without a traceparent) at the ratio", () => {
    expect(decide(production)).toBe(SamplingDecision.NOT_RECORD);
    expect(decide({ OTEL_TRACES_SAMPLER: "parentbased_always_on" })).toBe(
      SamplingDecision.RECORD_AND_SAMPLED,
    );
  });

  it("follows a caller's decision when parent-based, as the standard sampler does", () => {
    expect(decide(production, remoteParent(TraceFlags.SAMPLED))).toBe(
      SamplingDecision.RECORD_AND_SAMPLED,
    );
    expect(
      decide({ OTEL_TRACES_SAMPLER: "parentbased_always_on" }, remoteParent(TraceFlags.NONE)),
    ).toBe(SamplingDecision.NOT_RECORD);
    // Not parent-based: the ratio decides even under a sampled parent.
    expect(
      decide(
        { OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" },
        remoteParent(TraceFlags.SAMPLED),
      ),
    ).toBe(SamplingDecision.NOT_RECORD);
  });
});

describe("roots decided before any span", () => {
  it("take the configured share of requests", () => {
    const sampling = samplingFromEnv({
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.1",
    });
    let taken = 0;
    for (let i = 0; i < 20_000; i++) if (sampleRoot(sampling)) taken++;
    // 2000 expected; the binomial spread is about 42.
    expect(taken).toBeGreaterThan(1700);
    expect(taken).toBeLessThan(2300);
    expect(sampleRoot(samplingFromEnv({ OTEL_TRACES_SAMPLER: "always_off" }))).toBe(false);
    expect(sampleRoot(samplingFromEnv({}))).toBe(true);
  });

  it("that are not taken get valid, distinct W3C ids marked not sampled", () => {
    const ids = new Set<string>();
    // More than one block of pooled random bytes.
    for (let i = 0; i < 1000; i++) {
      const root = unsampledRoot();
      expect(isSpanContextValid(root)).toBe(true);
      expect(root.traceFlags).toBe(TraceFlags.NONE);
      expect(root.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(root.spanId).toMatch(/^[0-9a-f]{16}$/);
      ids.add(root.traceId);
    }
    expect(ids.size).toBe(1000);
  });

  it("that are taken get valid W3C ids marked sampled, from the same pool", () => {
    const root = newRoot(TraceFlags.SAMPLED);
    expect(isSpanContextValid(root)).toBe(true);
    expect(root.traceFlags).toBe(TraceFlags.SAMPLED);
    expect(root.stored[0]).toBe(TraceFlags.SAMPLED);
    expect(unsampledRoot().traceId).not.toBe(root.traceId);
  });
});
