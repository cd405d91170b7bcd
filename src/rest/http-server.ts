import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { Config } from "../config/config.ts";
import { http1ServerOptions, limitHttp1 } from "../connections/http1-limits.ts";
import { redactingLogger } from "../logging.ts";
import { TracedLogController } from "../tracing/request-spans.ts";
import { tracingActive } from "../tracing/tracing.ts";
import { clientErrorHandler } from "./client-errors.ts";
import { frameworkErrors } from "./error-handler.ts";
import { requestLoggers } from "./request-loggers.ts";

/**
 * The HTTP/1.1 port's server (REST, Connect, gRPC-Web and the dashboard), not listening yet: its
 * bounds on headers, bodies and idle connections, JSON schema checks as the spec wants them
 * (no coercion, every error), and errors in the spec's shape even for what Node's parser refuses.
 */
export function httpServer(
  config: Config,
  logger: FastifyServerOptions["logger"],
): FastifyInstance {
  const app = Fastify({
    logger: redactingLogger(logger, config.logLevel),
    // Each request's logger made when first written through (request-loggers.ts).
    childLoggerFactory: requestLoggers,
    bodyLimit: 1024 * 1024,
    // Path parameters longer than the router's default (100) reach their schema, whose maxLength
    // answers a 400 naming the parameter instead of the router's 414.
    routerOptions: { maxParamLength: 2048 },
    // Header, body-idle, whole-request and keep-alive bounds (connections/http1-limits.ts).
    ...http1ServerOptions(
      config.connections,
      Math.max(config.requestTimeoutMs, config.batchStoreTimeoutMs),
    ),
    ajv: {
      customOptions: {
        coerceTypes: false,
        allErrors: true,
        removeAdditional: false,
        // A form sends ignoreQuietHours as "true", JSON as true: one field of two types.
        allowUnionTypes: true,
      },
    },
    // lifecycle/draining.ts answers while closing, in the spec's shape.
    return503OnClosing: false,
    frameworkErrors,
    // Requests Node's HTTP parser refuses get the spec's error shape too.
    clientErrorHandler,
    // With tracing, tracing/request-spans.ts writes "incoming request", with the trace id.
    ...(tracingActive() && { logController: new TracedLogController() }),
  });
  limitHttp1(app.server, config.connections);
  return app;
}
