import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  trace,
} from "@opentelemetry/api";
import { type FastifyInstance, type FastifyRequest, LogController } from "fastify";
import { currentRequest } from "../request-context.ts";
import { sampleRoot, unsampledRoot } from "./root-sampling.ts";
import { rootRequestSpan, tracer, traceSampling } from "./tracing.ts";

// A span per request, continuing the caller's trace when it sends `traceparent` (REST, Connect
// and gRPC-Web on PORT; Connect and gRPC on GRPC_PORT through the interceptor). Everything the
// request does runs in its span's context, so a message it accepts keeps that trace.

const spans = new WeakMap<FastifyRequest, Span>();

/** Register after request-context.ts's hook: the span's trace id joins the request's log lines. */
export function traceRequests(app: FastifyInstance): void {
  app.addHook("onRequest", (request, _reply, done) => {
    const headers = request.headers;
    const continued = headers.traceparent !== undefined || headers.baggage !== undefined;
    const served = currentRequest();
    const sampling = traceSampling();
    // A trace of its own that is not recorded records nothing of this request, nor of its
    // messages' later work (parent-based sampling): decided before any span is made, the request
    // runs outside any span context, and its messages keep this unsampled trace (so their
    // webhooks still pass it on). Most requests in production take this path (root-sampling.ts).
    if (!continued && sampling && !sampleRoot(sampling)) {
      // Its trace id joins the request's log lines from here (request-context.ts).
      if (served) served.unsampledSpan = unsampledRoot();
      request.log.info({ req: request }, "incoming request");
      done();
      return;
    }
    const route = request.routeOptions.url ?? "unmatched";
    const name = `${request.method} ${route}`;
    const attributes = { "http.request.method": request.method, "http.route": route };
    // A caller's trace is continued by the SDK; a root here is one `sampleRoot` took.
    const parent = continued ? propagation.extract(ROOT_CONTEXT, headers) : ROOT_CONTEXT;
    const span = continued
      ? tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent)
      : rootRequestSpan(name, attributes);
    // Every line of the request carries its trace id: the logger's mixin adds it from the
    // request's context (request-context.ts), cheaper than a child logger per request. Fastify
    // writes "incoming request" before any hook runs, so with tracing that line is written here
    // instead (TracedLogController).
    if (served) served.span = span;
    request.log.info({ req: request }, "incoming request");
    spans.set(request, span);
    // A root the service took: what the request does finds its span in the request's context.
    if (served && !continued) {
      done();
      return;
    }
    // A caller's trace: its span in the active context, with the caller's baggage.
    context.with(trace.setSpan(parent, span), done);
  });
  app.addHook("onResponse", (request, reply, done) => {
    const span = spans.get(request);
    if (span) {
      span.setAttribute("http.response.status_code", reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}

/** Fastify's request logging, but for "incoming request", which traceRequests writes. */
export class TracedLogController extends LogController {
  override incomingRequest(): void {}
}

const headerGetter: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
};

/**
 * The span of a Connect or gRPC call: on GRPC_PORT, where no Fastify hook runs, the server span of
 * the call (continuing its `traceparent`); on PORT the request's span, which gets the procedure as
 * `rpc.method` (a second span of the same work doubled what a sampled call cost).
 */
export const traceCalls: Interceptor = (next) => async (request) => {
  // Within a request whose trace is not sampled, a span of the call would not be either.
  if (currentRequest()?.unsampledSpan) return next(request);
  const procedure = `${request.service.typeName}/${request.method.name}`;
  const outer = currentRequest()?.span ?? trace.getSpan(context.active());
  if (outer) {
    outer.setAttribute("rpc.method", procedure);
    return next(request);
  }
  return tracer().startActiveSpan(
    procedure,
    { kind: SpanKind.SERVER, attributes: { "rpc.method": procedure } },
    propagation.extract(ROOT_CONTEXT, request.header, headerGetter),
    async (span) => {
      try {
        return await next(request);
      } catch (error) {
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: Code[ConnectError.from(error).code],
        });
        throw error;
      } finally {
        span.end();
      }
    },
  );
};
