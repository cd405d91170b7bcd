import http from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";

// Requests Node's HTTP parser refuses never reach Fastify: a method that is not an HTTP token,
// bad framing (Content-Length with Transfer-Encoding, a malformed chunk: request smuggling),
// oversized headers, a request that arrives too slowly. Node emits `clientError` with the parser's
// code; the answer is written on the socket here, in the spec's error shape, and the connection
// closed, since what follows on it cannot be trusted.

const MESSAGES: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, "the request headers are larger than the server accepts"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "the request was not received in time"],
  HPE_INVALID_METHOD: [400, "the request method is not a valid HTTP method"],
  HPE_UNEXPECTED_CONTENT_LENGTH: [
    400,
    "the request has both Content-Length and Transfer-Encoding: its length is ambiguous",
  ],
  HPE_INVALID_TRANSFER_ENCODING: [400, "the request's Transfer-Encoding is not valid"],
  HPE_INVALID_CONTENT_LENGTH: [400, "the request's Content-Length is not valid"],
  HPE_INVALID_CHUNK_SIZE: [400, "the request's chunked body is malformed"],
};

const DEFAULT: [number, string] = [400, "the request is not valid HTTP/1.1"];

/** For Fastify's `clientErrorHandler` option. */
export function clientErrorHandler(
  this: FastifyInstance,
  error: Error & { code?: string },
  socket: Socket,
): void {
  // A reset connection has nobody left to answer.
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [status, message] = MESSAGES[error.code ?? ""] ?? DEFAULT;
  this.log.debug({ err: error }, "refused a request Node's HTTP parser could not read");
  const body = JSON.stringify({ errors: { request: [message] } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
