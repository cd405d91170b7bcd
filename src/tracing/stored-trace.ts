import type { SpanContext } from "@opentelemetry/api";

// A trace as a message stores it: 25 bytes, the trace flags, then the trace id's 16 bytes and the
// span id's 8 (a third of the `traceparent` header's size, in every message document, which the
// database reads and writes at each status change). Written by tracing.ts for a request's span
// and laid out in place by root-sampling.ts for an unsampled root; read back by tracing.ts.

export const STORED_TRACE_BYTES = 25;
const TRACE_ID_AT = 1;
const SPAN_ID_AT = 17;

/** The bytes stored for `span`'s context. */
export function storedTrace(span: SpanContext): Buffer {
  const bytes = Buffer.allocUnsafe(STORED_TRACE_BYTES);
  bytes[0] = span.traceFlags;
  bytes.write(span.traceId, TRACE_ID_AT, SPAN_ID_AT - TRACE_ID_AT, "hex");
  bytes.write(span.spanId, SPAN_ID_AT, STORED_TRACE_BYTES - SPAN_ID_AT, "hex");
  return bytes;
}

/** The trace id of stored bytes, in hex. */
export const storedTraceId = (bytes: Buffer): string =>
  bytes.toString("hex", TRACE_ID_AT, SPAN_ID_AT);

/** The span id of stored bytes, in hex. */
export const storedSpanId = (bytes: Buffer): string =>
  bytes.toString("hex", SPAN_ID_AT, STORED_TRACE_BYTES);

/** Whether both ids of stored bytes are valid (W3C: all zeros is the one invalid value of each). */
export function storedIdsValid(bytes: Buffer): boolean {
  return nonZero(bytes, TRACE_ID_AT, SPAN_ID_AT) && nonZero(bytes, SPAN_ID_AT, STORED_TRACE_BYTES);
}

function nonZero(bytes: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return true;
  return false;
}
