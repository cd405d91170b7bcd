import { type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { contextOf, type StoredTrace, tracer, tracingActive } from "./tracing.ts";

// Spans of a message's later work, in the trace of the request that accepted it: each carrier
// submission and each webhook attempt. The message keeps that trace's context in its document
// (`traceContext`), written with it when accepted.

interface Traced {
  _id: number;
  traceContext?: StoredTrace;
}

export interface SubmissionSpans {
  /** The carrier could not be reached: every span ends in error. */
  failed(error: unknown): void;
  /** The carrier answered: each message's span ends, in error when its parts were refused. */
  answered(errorOf: (messageId: number) => string | undefined): void;
}

/** One span per message handed to the carrier together; undefined when tracing is off. */
export function submissionSpans(
  carrier: string,
  messages: readonly Traced[],
): SubmissionSpans | undefined {
  if (!tracingActive()) return undefined;
  const spans = new Map<number, Span>();
  for (const message of messages) {
    if (!message.traceContext) continue;
    spans.set(
      message._id,
      tracer().startSpan(
        "carrier submit",
        {
          kind: SpanKind.CLIENT,
          attributes: { "sms.carrier": carrier, "sms.message_id": message._id },
        },
        contextOf(message.traceContext),
      ),
    );
  }
  return {
    failed(error) {
      for (const span of spans.values()) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
        span.end();
      }
    },
    answered(errorOf) {
      for (const [id, span] of spans) {
        const error = errorOf(id);
        if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
        span.end();
      }
    },
  };
}

/** A span for one webhook attempt of `message`; undefined when tracing is off or it has no trace. */
export function webhookSpan(message: Traced, status: string): Span | undefined {
  if (!tracingActive() || !message.traceContext) return undefined;
  return tracer().startSpan(
    `webhook ${status}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { "sms.status": status, "sms.message_id": message._id },
    },
    contextOf(message.traceContext),
  );
}

/** What a webhook span records of its attempt's result (the notifier's AttemptResult is one). */
interface WebhookAnswer {
  httpStatus: number;
  error?: string;
}

export function endWebhookSpan(span: Span, result: WebhookAnswer): void {
  span.setAttribute("http.response.status_code", result.httpStatus);
  if (result.error !== undefined) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
  }
  span.end();
}
