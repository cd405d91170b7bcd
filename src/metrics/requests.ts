import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { Registry } from "prom-client";
import { LabelledHistogram } from "./histogram.ts";

// Requests: every answer of PORT by route and status, and every Connect/gRPC call (both ports)
// by procedure and code. Labels hold route templates and procedure names, never a path with an
// id in it: `/sms-batch/:id`, not `/sms-batch/42`.

/** Seconds; from a cache hit to a 10000-message batch. */
const LATENCY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

export function requestMetrics(registry: Registry) {
  // Observed on every answer: the cheap histogram (metrics/histogram.ts).
  const http = new LabelledHistogram(
    "sms_http_request_duration_seconds",
    "Answers on PORT (REST, Connect, gRPC-Web, dashboard, health) by route template, method and status code",
    ["route", "method", "status_code"],
    LATENCY_BUCKETS,
    registry,
  );
  // Observed on every call, REST's included (it calls the services in process): the cheap one too.
  const rpc = new LabelledHistogram(
    "sms_rpc_duration_seconds",
    "Connect and gRPC calls on either port by procedure and Connect code",
    ["procedure", "code"],
    LATENCY_BUCKETS,
    registry,
  );

  return {
    /** Times every answer of `app` (register on the root instance). */
    observe(app: FastifyInstance): void {
      app.addHook("onResponse", (request, reply, done) => {
        // No route: a 404, or a request refused before routing (parse errors, closing).
        const route = request.routeOptions.url ?? "unmatched";
        // Bounded label values (templates, not paths): the histogram keeps one child of each.
        http
          .labels(route, request.method, String(reply.statusCode))
          .observe(reply.elapsedTime / 1000);
        done();
      });
    },
    /** A Connect interceptor timing each call; the procedure is its service and method name. */
    interceptor: ((next) => async (request) => {
      const started = performance.now();
      const procedure = `${request.service.typeName}/${request.method.name}`;
      const observe = (code: string) =>
        rpc.labels(procedure, code).observe((performance.now() - started) / 1000);
      try {
        const response = await next(request);
        observe("ok");
        return response;
      } catch (error) {
        observe(Code[ConnectError.from(error).code] ?? "unknown");
        throw error;
      }
    }) satisfies Interceptor as Interceptor,
  };
}

export type RequestMetrics = ReturnType<typeof requestMetrics>;
