import { AsyncLocalStorage } from "node:async_hooks";
import type { Span, SpanContext } from "@opentelemetry/api";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";

// Every log line of a request carries its reqId (docs/design.md, "Operations"). Fastify's request.log
// does; but a request also logs through the app's logger, from code that has no request at hand
// (a lane marker's failure, an idempotent answer that could not be recorded). The request's
// identity rides the async context instead, and the logger's mixin (logging.ts) adds it to every
// line written within it.

export interface RequestContext {
  reqId: string;
  /** The request's own logger, whose lines already carry reqId. */
  log: FastifyBaseLogger;
  /**
   * The request's span when its trace is recorded (a root the service took, or a caller's trace
   * continued): what the request does finds it here rather than in OpenTelemetry's active
   * context, which would cost each such request context copies and a run of its async storage.
   */
  span?: Span;
  /**
   * The request's span when its trace is not sampled: such a request runs outside any span
   * context (tracing/request-spans.ts), and its messages keep this trace (tracing.ts).
   */
  unsampledSpan?: SpanContext;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** The request being served by the current async context, if any. */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}

/** Runs each request's hooks and handler within its context. Register before other hooks. */
export function trackRequests(app: FastifyInstance): void {
  app.addHook("onRequest", (request, _reply, done) => {
    // Every field from the start: a context given its trace fields later (a tenth of requests
    // sampled, the others not) would take one of several shapes, and every reader of it would
    // pay for all of them.
    const context: RequestContext = {
      reqId: String(request.id),
      log: request.log,
      span: undefined,
      unsampledSpan: undefined,
    };
    storage.run(context, done);
  });
}

/** The fields a log line written within a request lacks: reqId (and traceId), unless its logger has them. */
export function requestFields(logger: { bindings(): Record<string, unknown> }): object {
  const context = storage.getStore();
  if (!context) return {};
  // The request's logger carries reqId already (and its children anything bound); a repeated key
  // would be noise. Its lines are written by its pino child, made when first written
  // (rest/request-loggers.ts).
  const own =
    (logger as unknown) === context.log ||
    (logger as unknown) === (context.log as { made?: unknown }).made;
  // The request's own logger binds reqId and nothing else: no need to read its bindings (pino
  // parses them from JSON on every call).
  // The trace id is read from the request's span context only for a line written.
  const traceId = (context.span?.spanContext() ?? context.unsampledSpan)?.traceId;
  if (own) return traceId === undefined ? {} : { traceId };
  const bound = logger.bindings();
  const fields: Record<string, string> = {};
  if (bound.reqId === undefined) fields.reqId = context.reqId;
  if (traceId !== undefined && bound.traceId === undefined) fields.traceId = traceId;
  return fields;
}
