import type { FastifyRequest, FastifyServerOptions } from "fastify";
import { stdSerializers } from "pino";
import { requestFields } from "./request-context.ts";

// What a log line may hold: never a credential (docs/design.md, "Operations"). GET and DELETE carry
// apiKey and apiSecret in the query, RPC callers an Authorization header, the operator a bearer
// token; none of them reaches a log line or an error log.

/** Query parameters whose values are never logged: the spec's credentials and look-alikes. */
const CREDENTIAL_NAME = /api.?key|secret|token|passw|auth|signature|credential|session/i;

const REDACTED = "[REDACTED]";

/**
 * The request target with the values of credential parameters replaced. Names are compared
 * decoded (`api%53ecret` is apiSecret), as the query parser sees them.
 */
export function redactUrl(url: string): string {
  const mark = url.indexOf("?");
  if (mark < 0) return url;
  const query = url.slice(mark + 1);
  const kept = query.split("&").map((pair) => {
    const equals = pair.indexOf("=");
    const rawName = equals < 0 ? pair : pair.slice(0, equals);
    return CREDENTIAL_NAME.test(decodeName(rawName)) ? `${rawName}=${REDACTED}` : pair;
  });
  return `${url.slice(0, mark)}?${kept.join("&")}`;
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, " "));
  } catch {
    // Not decodable: judged as written, and by its letters alone.
    return name.replace(/%[0-9a-f]{2}/gi, "");
  }
}

/**
 * Paths that pino blanks wherever code logs them: headers, bodies and errors that carry a
 * credential. `err.rawPacket` is the raw request an HTTP parse error holds (Fastify logs it at
 * trace level), Authorization header included.
 */
const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  "headers.authorization",
  "headers.cookie",
  "*.headers.authorization",
  "authorization",
  "*.authorization",
  "apiSecret",
  "*.apiSecret",
  "*.*.apiSecret",
  "adminToken",
  "*.adminToken",
  "webhookSecret",
  "*.webhookSecret",
  "secretHash",
  "*.secretHash",
  "err.rawPacket",
  "*.rawPacket",
];

/** Fastify's request line, with the query's credentials redacted and no header at all. */
function requestSerializer(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** An error as pino writes it, minus the raw request bytes a client error carries. */
function errorSerializer(error: Error) {
  const serialized = stdSerializers.err(error);
  delete (serialized as Record<string, unknown>).rawPacket;
  return serialized;
}

type LoggerOption = FastifyServerOptions["logger"];

/** The service's logger options: the given level and destination, with credentials redacted. */
export function redactingLogger(options: LoggerOption, level: string): LoggerOption {
  if (options === false) return false;
  const given = options === true || options === undefined ? {} : options;
  return {
    level,
    ...given,
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    // reqId (and traceId) on every line written while serving a request (request-context.ts).
    mixin: (_fields: object, _level: number, logger: { bindings(): Record<string, unknown> }) =>
      requestFields(logger),
    serializers: { ...given.serializers, req: requestSerializer, err: errorSerializer },
  };
}
