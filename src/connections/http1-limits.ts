// Time bounds on PORT (HTTP/1.1), so no connection can hold the service by sending slowly
// (slowloris): a request's head must arrive within the headers timeout, its whole body within the
// request timeout, and no body may pause longer than the body idle timeout; an idle keep-alive
// connection closes after the keep-alive timeout, and a connection on which nothing moves while
// its request runs after the longest call deadline plus the body idle timeout. Node answers the
// first two with 408 (rest/client-errors.ts writes it); a paused body closes the connection.
import type http from "node:http";
import type { ConnectionLimits } from "../config/config.ts";

/** Fastify's options (`http` is handed to `http.createServer`) for the HTTP/1.1 server it makes. `longestCallMs`: the longer call deadline. */
export function http1ServerOptions(
  limits: ConnectionLimits,
  longestCallMs: number,
): {
  http: http.ServerOptions;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionTimeout: number;
} {
  return {
    http: {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Node checks the two above this often (30 s by default): a bound is kept to about this.
      connectionsCheckingInterval: checkingIntervalMs(limits),
    },
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // The socket's idle timeout while a request runs (the body idle timeout replaces it while a
    // body arrives): a running call answers by its deadline, so silence past it is a client
    // that stopped reading the answer.
    connectionTimeout: longestCallMs + limits.bodyIdleTimeoutMs,
  };
}

/** What Fastify's options cannot say: the body idle timeout and the connection cap. */
export function limitHttp1(server: http.Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.maxConnections;
  server.on("request", (request: http.IncomingMessage, response: http.ServerResponse) => {
    if (!hasBody(request)) return;
    const socket = request.socket;
    // Node destroys a socket whose timeout fires with no listener on the request, the response
    // or the server: a body that stops arriving ends its connection.
    socket.setTimeout(limits.bodyIdleTimeoutMs);
    request.once("end", () => {
      // Once answered, Node has set the keep-alive timeout already: leave it.
      if (!response.writableEnded) socket.setTimeout(server.timeout);
    });
  });
}

function hasBody(request: http.IncomingMessage): boolean {
  const length = request.headers["content-length"];
  return (
    request.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0")
  );
}

/** A tenth of the shorter bound, within 10 ms and 1 s. */
export function checkingIntervalMs(limits: ConnectionLimits): number {
  const shorter = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  return Math.min(1000, Math.max(10, Math.floor(shorter / 10)));
}
