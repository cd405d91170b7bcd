import { randomBytes } from "node:crypto";
import { type SpanContext, TraceFlags } from "@opentelemetry/api";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace-node";
import { STORED_TRACE_BYTES, storedIdsValid, storedSpanId, storedTraceId } from "./stored-trace.ts";

// Which traces are recorded: the standard OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, read
// here once rather than by the SDK, so that a request without a caller's trace (a root) is decided
// before any span is made. Production samples a tenth of the roots (README, "Production"): the
// nine tenths that are not recorded then cost a random id and no call into the SDK, where the SDK's
// unsampled span cost each request its ids, sampler, span object and context lookups (figure 13,
// docs/decisions.md "Operations: health, logs, metrics and tracing"). Everything else (a
// caller's traceparent, the work a stored trace continues) is decided by the SDK's sampler, built
// from the same variables.

export interface TraceSampling {
  /** The share of roots recorded: 1 records every one, 0 none. */
  rootRatio: number;
  /**
   * The SDK's sampler, the standard one the variables name: for the spans the SDK makes (a
   * caller's trace continued, a message's later work, a call on GRPC_PORT). A root taken here
   * never asks it: its span is the service's own (request-span.ts).
   */
  sampler: Sampler;
}

const PARENT_BASED = "parentbased_";

/** The sampling the OTEL_TRACES_SAMPLER variables ask for; throws, naming the variable, when they ask for none of the standard ones. */
export function samplingFromEnv(env: NodeJS.ProcessEnv): TraceSampling {
  const name = env.OTEL_TRACES_SAMPLER || "parentbased_always_on";
  const parentBased = name.startsWith(PARENT_BASED);
  const root = parentBased ? name.slice(PARENT_BASED.length) : name;
  let rootRatio: number;
  if (root === "always_on") rootRatio = 1;
  else if (root === "always_off") rootRatio = 0;
  else if (root === "traceidratio") rootRatio = ratioFrom(env.OTEL_TRACES_SAMPLER_ARG);
  else {
    throw new Error(
      `OTEL_TRACES_SAMPLER: "${name}" is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio`,
    );
  }
  const rootSampler =
    rootRatio === 1
      ? new AlwaysOnSampler()
      : rootRatio === 0
        ? new AlwaysOffSampler()
        : new TraceIdRatioBasedSampler(rootRatio);
  return {
    rootRatio,
    sampler: parentBased ? new ParentBasedSampler({ root: rootSampler }) : rootSampler,
  };
}

function ratioFrom(value: string | undefined): number {
  // The specification's default for a ratio sampler without an argument.
  if (value === undefined || value.trim() === "") return 1;
  const ratio = Number(value);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new Error(`OTEL_TRACES_SAMPLER_ARG: "${value}" is not a ratio from 0 to 1`);
  }
  return ratio;
}

/** Whether a root trace is recorded: a uniform draw against the ratio, as the trace id's is. */
export function sampleRoot(sampling: TraceSampling): boolean {
  return sampling.rootRatio === 1 || Math.random() < sampling.rootRatio;
}

/**
 * A new trace's context with random W3C trace and span ids: an unsampled root (flags 00) or the
 * span of a request the service took as a sampled root (flags 01, request-span.ts). Its bytes are
 * laid out as a message stores a trace (stored-trace.ts), so a message keeps them without a copy;
 * the ids become hex only when read (a log line, a webhook's `traceparent`, an export).
 */
export class RootIds implements SpanContext {
  readonly isRemote = false;
  readonly traceFlags: TraceFlags;
  private traceHex: string | undefined;
  private spanHex: string | undefined;

  /** `stored`: the trace as a message stores it, its flags first. */
  constructor(readonly stored: Buffer) {
    this.traceFlags = stored[0] as TraceFlags;
  }

  get traceId(): string {
    this.traceHex ??= storedTraceId(this.stored);
    return this.traceHex;
  }

  get spanId(): string {
    this.spanHex ??= storedSpanId(this.stored);
    return this.spanHex;
  }
}

// Random ids drawn in blocks, one call into the system's generator per 160 roots; a block is
// never refilled, since the roots made from it keep views of it.
const ROOTS_PER_BLOCK = 160;
let block = Buffer.alloc(0);
let next = 0;

/** A new trace's ids (random, W3C trace context) with these flags. */
export function newRoot(flags: TraceFlags): RootIds {
  for (;;) {
    if (next === block.length) {
      block = randomBytes(STORED_TRACE_BYTES * ROOTS_PER_BLOCK);
      next = 0;
    }
    const stored = block.subarray(next, next + STORED_TRACE_BYTES);
    next += STORED_TRACE_BYTES;
    stored[0] = flags;
    if (storedIdsValid(stored)) return new RootIds(stored);
  }
}

/** A new trace that is not recorded. */
export const unsampledRoot = (): RootIds => newRoot(TraceFlags.NONE);
