import type { FastifyInstance, FastifyRequest } from "fastify";
import { HEALTH_PATH } from "./health.ts";

// While the service closes (SIGTERM, `app.close()`), requests already running finish and new
// ones get 503 at once, with Retry-After, so a client or load balancer retries elsewhere. Fastify's
// own `return503OnClosing` answers `{error, message, statusCode}`, not the spec's shape: this hook
// answers instead, before any other hook runs.

/** Long enough for a restarted instance to be listening again. */
export const CLOSING_RETRY_AFTER_S = 5;
export const CLOSING_MESSAGE = "the service is shutting down; retry in a few seconds";

/** Connect and gRPC-Web paths on the REST port: /package.Service/Method. */
const RPC_PATH = /^\/[A-Za-z_][\w]*(\.[A-Za-z_]\w*)+\/[A-Za-z_]\w*$/;

/**
 * Registers the hooks; call before any other onRequest hook. Returns whether the service is
 * closing, which `/health/ready` reports: the health paths answer for themselves while closing
 * (liveness 200, readiness 503 naming "draining"), so an orchestrator can tell the two apart.
 */
export function refuseWhileClosing(app: FastifyInstance): () => boolean {
  let closing = false;
  let reaper: NodeJS.Timeout | undefined;
  app.addHook("preClose", async () => {
    closing = true;
    app.log.info("closing: new requests are answered 503");
    // Node closes the connections idle when closing starts, not those that become idle later
    // (a keep-alive client's, after its last answer): they would hold close() until they time out.
    reaper = setInterval(() => app.server.closeIdleConnections(), 250);
  });
  app.addHook("onClose", async () => {
    clearInterval(reaper);
  });
  // An answer finished while closing tells the client not to reuse the connection.
  // Both hooks take a callback, not a promise: they run on every request (issue 43).
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    done(null, payload);
  });
  app.addHook("onRequest", (request, reply, done) => {
    if (!closing || HEALTH_PATH.test(request.url)) return done();
    reply
      .code(503)
      .header("retry-after", String(CLOSING_RETRY_AFTER_S))
      .header("connection", "close")
      .type("application/json")
      .serializer(JSON.stringify);
    reply.send(closingBody(request));
  });
  return () => closing;
}

function closingBody(request: FastifyRequest): unknown {
  // A Connect error body: Connect and gRPC-Web clients read 503 as `unavailable`.
  if (RPC_PATH.test(request.url.split("?")[0] ?? "")) {
    return { code: "unavailable", message: CLOSING_MESSAGE };
  }
  // The spec's shape; a string on the routes that use strings (POST /sms-batch).
  return request.routeOptions.config?.stringErrors
    ? { errors: { request: CLOSING_MESSAGE } }
    : { errors: { request: [CLOSING_MESSAGE] } };
}
