import { type ContextValues, createContextKey, createContextValues } from "@connectrpc/connect";

// The address a call came from, for the failed-authentication limit. Each door knows it (Fastify's
// request.ip, the HTTP/2 socket) and hands it to the services as a context value.

export const CLIENT_ADDRESS = createContextKey<string | undefined>(undefined, {
  description: "the caller's network address",
});

/** A socket's address as the limits key it: IPv4 in IPv6 (`::ffff:1.2.3.4`) is the IPv4 one. */
export function clientAddress(address: string | undefined): string | undefined {
  return address?.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, "");
}

/** Context values of one call from `address`. */
export function fromAddress(address: string | undefined): ContextValues {
  const values = createContextValues();
  values.set(CLIENT_ADDRESS, clientAddress(address));
  return values;
}
