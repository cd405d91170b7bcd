import type { CallOptions } from "@connectrpc/connect";
import type { FastifyReply, FastifyRequest } from "fastify";
import { fromAddress } from "../rate-limits/client-address.ts";
import { PRESENTED_CREDENTIALS } from "../services/authentication.ts";

// How a REST request becomes a service call and back: credentials as a context value, the
// Idempotency-Key header as is, the client's address for the failed-authentication limit; and
// the headers the service answers with (a replay's mark, a refusal's retry hint) onto the reply.

export interface Credentials {
  apiKey: string;
  apiSecret: string;
}

/** Response headers of a service call that the REST answer carries too. */
const FORWARDED_HEADERS = [
  "idempotent-replayed",
  "retry-after",
  "ratelimit-policy",
  "ratelimit",
] as const;

export function serviceCall(
  request: FastifyRequest,
  reply: FastifyReply,
  { apiKey, apiSecret }: Credentials,
): CallOptions {
  // The credentials go to authentication as they are (no Basic header to encode and decode).
  const contextValues = fromAddress(request.ip);
  contextValues.set(PRESENTED_CREDENTIALS, { apiKey, apiSecret });
  const key = request.headers["idempotency-key"];
  return {
    ...(key !== undefined && {
      headers: { "idempotency-key": Array.isArray(key) ? key.join(", ") : key },
    }),
    contextValues,
    onHeader: (answered) => forwardServiceHeaders(answered, reply),
  };
}

/** Copies the service's answer headers (of a success, or an error's metadata) onto the reply. */
export function forwardServiceHeaders(answered: Headers, reply: FastifyReply): void {
  for (const name of FORWARDED_HEADERS) {
    const value = answered.get(name);
    if (value !== null) reply.header(name, value);
  }
}
