import {
  type Attributes,
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  TraceFlags,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { OTLPTraceExporter as OtlpJsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as OtlpProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { Binary } from "mongodb";
import { currentRequest } from "../request-context.ts";
import type { StoredTrace } from "../store/documents.ts";
import { RequestSpan, type RequestSpanSink } from "./request-span.ts";
import { newRoot, RootIds, samplingFromEnv, type TraceSampling } from "./root-sampling.ts";
import { STORED_TRACE_BYTES, storedSpanId, storedTrace, storedTraceId } from "./stored-trace.ts";

// Traces (docs/design.md, "Operations"): OpenTelemetry, configured only by the standard OTEL_* variables
// and off when none is set. When off, nothing here runs: no provider, no hooks, no trace context
// in documents, so the service pays nothing for it.

let active = false;
let serviceTracer: Tracer | undefined;
let sampling: TraceSampling | undefined;
let requestSpans: RequestSpanSink | undefined;

/** Whether the OTEL_* variables ask for traces (an OTLP endpoint, or an exporter other than none). */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === "true") return false;
  const exporter = env.OTEL_TRACES_EXPORTER;
  if (exporter === "none") return false;
  return Boolean(
    exporter || env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
  );
}

/**
 * How long a finished span waits for its batch's export unless OTEL_BSP_SCHEDULE_DELAY says (the
 * SDK's default is 5000 ms). A span kept for seconds outlives the young generation's collections
 * and is promoted, so every sampled span cost a copy and an old-generation collection's share:
 * with a tenth of requests sampled, the service spent 5-7 % more CPU per request with 5 s than
 * with 200 ms (docs/decisions.md, "Operations: health, logs, metrics and tracing"). Sooner costs
 * one small export request per 200 ms while spans finish, none while none do.
 */
export const SPAN_EXPORT_DELAY_MS = 200;

/** The span processor's batching: ours where OTEL_BSP_SCHEDULE_DELAY is unset, else the SDK reads it. */
export function spanBatching(env: NodeJS.ProcessEnv): { scheduledDelayMillis?: number } {
  return env.OTEL_BSP_SCHEDULE_DELAY ? {} : { scheduledDelayMillis: SPAN_EXPORT_DELAY_MS };
}

/**
 * The OTLP encoding the standard variables ask for: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
 * OTEL_EXPORTER_OTLP_PROTOCOL, else the specification's default, http/protobuf (a third of JSON's
 * bytes on the wire). gRPC is not offered: the service would carry a second HTTP/2 client for
 * what every collector takes over HTTP as well.
 */
export function otlpProtocol(env: NodeJS.ProcessEnv): "http/protobuf" | "http/json" {
  const protocol =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || "http/protobuf";
  if (protocol === "http/protobuf" || protocol === "http/json") return protocol;
  throw new Error(
    `OTEL_EXPORTER_OTLP_PROTOCOL: only "http/protobuf" (the default) or "http/json" is supported, not "${protocol}"`,
  );
}

/**
 * Starts the process's tracer provider when the environment asks for it: W3C trace context,
 * spans batched to OTLP over HTTP in the encoding `otlpProtocol` reads (the exporter reads its
 * endpoint, headers and timeout from the OTEL_EXPORTER_OTLP_* variables, the batching from
 * OTEL_BSP_*, with a shorter default delay: `spanBatching`). Returns its shutdown, which flushes
 * the spans not yet sent; undefined when tracing stays off.
 */
export function startTracing(
  env: NodeJS.ProcessEnv = process.env,
): (() => Promise<void>) | undefined {
  if (!tracingRequested(env)) return undefined;
  const exporter = env.OTEL_TRACES_EXPORTER ?? "otlp";
  if (exporter !== "otlp") {
    throw new Error(
      `OTEL_TRACES_EXPORTER: only "otlp" (or "none") is supported, not "${exporter}"`,
    );
  }
  const chosen = samplingFromEnv(env);
  const otlp =
    otlpProtocol(env) === "http/json" ? new OtlpJsonExporter() : new OtlpProtobufExporter();
  const resource = resourceFromAttributes({
    "service.name": env.OTEL_SERVICE_NAME || "sms-service",
  });
  const processor = new BatchSpanProcessor(otlp, spanBatching(env));
  const provider = new NodeTracerProvider({
    sampler: chosen.sampler,
    resource,
    spanProcessors: [processor],
  });
  // Also installs the W3C trace-context propagator and the async-local-storage context manager.
  provider.register();
  // Asked for once: the provider's getTracer builds a key string and looks it up on every call.
  serviceTracer = provider.getTracer("sms-service");
  sampling = chosen;
  // The provider's tracer's own scope, so request spans export beside its spans.
  requestSpans = { processor, resource, scope: { name: "sms-service" } };
  active = true;
  return async () => {
    active = false;
    serviceTracer = undefined;
    sampling = undefined;
    requestSpans = undefined;
    await provider.shutdown();
  };
}

/** True once startTracing started a provider: the service then adds its spans and hooks. */
export function tracingActive(): boolean {
  return active;
}

/** The started provider's sampling (undefined while tracing is off). */
export const traceSampling = (): TraceSampling | undefined => sampling;

/**
 * The span of a request whose trace `sampleRoot` took (request-span.ts); the tracer's span of a
 * new trace once tracing has stopped (the global no-op).
 */
export function rootRequestSpan(name: string, attributes: Attributes): Span {
  if (!requestSpans) {
    return tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, ROOT_CONTEXT);
  }
  return new RequestSpan(name, newRoot(TraceFlags.SAMPLED), attributes, requestSpans);
}

/** The service's tracer: the started provider's, else the global one (a no-op when none is set). */
export const tracer = (): Tracer => serviceTracer ?? trace.getTracer("sms-service");

export type { StoredTrace };

/** The active trace context as the message stores it; undefined when there is none (or tracing is off). */
export function currentTraceCarrier(): StoredTrace | undefined {
  if (!active) return undefined;
  const served = currentRequest();
  const span =
    served?.unsampledSpan ?? served?.span?.spanContext() ?? trace.getSpanContext(context.active());
  // A new root's bytes are already those a message stores.
  if (span instanceof RootIds) return new Binary(span.stored);
  if (!span || !isSpanContextValid(span)) return undefined;
  if (span.traceState) {
    const headers: Record<string, string> = {};
    propagation.inject(trace.setSpanContext(ROOT_CONTEXT, span), headers);
    if (!headers.traceparent) return undefined;
    return {
      traceparent: headers.traceparent,
      ...(headers.tracestate && { tracestate: headers.tracestate }),
    };
  }
  return new Binary(storedTrace(span));
}

/** The context a stored trace continues; the root context without one. */
export function contextOf(stored: StoredTrace | undefined) {
  if (!stored) return ROOT_CONTEXT;
  if (!(stored instanceof Binary)) return propagation.extract(ROOT_CONTEXT, stored);
  const value = stored.value();
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.length);
  if (bytes.length !== STORED_TRACE_BYTES) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceFlags: bytes[0] ?? 0,
    traceId: storedTraceId(bytes),
    spanId: storedSpanId(bytes),
    isRemote: true,
  });
}

/** The `traceparent` (and `tracestate`) continuing `span`, for an outgoing request. */
export function headersFor(span: Span): Record<string, string> {
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), headers);
  return headers;
}
