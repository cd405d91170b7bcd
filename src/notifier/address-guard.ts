/**
 * Private-address protection for status callback URLs (docs/design.md "Status webhooks"): a callback whose
 * host is, or resolves to, an address that is not globally reachable (IANA special-purpose
 * registries, special-purpose-addresses.ts: loopback, private, shared, link-local, documentation,
 * benchmarking, reserved, multicast...) is refused unless `allowPrivate`.
 *
 * DNS rebinding: the check runs inside the socket's own `lookup`, so the connection goes to the
 * very address that was checked (no second resolution). IP literals never reach `lookup` (Node
 * connects to them directly), so `checkCallbackUrl` checks those before the request. Requests
 * follow no redirect (node:http does not), so no other address is ever reached.
 *
 * The error says only that the address is not public: it is recorded on the message, where the
 * account (GetMessage, the dashboard) reads it, and what a host of ours resolves to, or which
 * range it is in, is none of its business. `address` and `block` keep the details for the code.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { nonGlobalBlock, parseAddress } from "./special-purpose-addresses.ts";

const NOT_PUBLIC = "callback address is not a public address";

export class AddressBlockedError extends Error {
  override readonly name = "AddressBlockedError";
  readonly code = "ERR_ADDRESS_BLOCKED";
  constructor(
    /** The refused address (not in the message). */
    readonly address: string,
    /** Its special-purpose block (not in the message). */
    readonly block: string,
  ) {
    super(NOT_PUBLIC);
  }
}

/**
 * Why an IP address is not a public (globally reachable) address: the name of its special-purpose
 * block, e.g. "loopback", "reserved"; undefined when it is public. A string that is not an IP
 * address is refused as "not an IP address".
 */
export function blockedAddressReason(address: string): string | undefined {
  const parsed = parseAddress(address);
  return parsed ? nonGlobalBlock(parsed) : "not an IP address";
}

/**
 * Checks what can be checked before connecting: an http(s) URL, and when its host is an IP literal,
 * that the address is allowed. Throws AddressBlockedError (or TypeError for an unusable URL).
 */
export function checkCallbackUrl(url: URL, allowPrivate: boolean): void {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`unsupported callback URL scheme ${url.protocol}`);
  }
  if (allowPrivate) return;
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host) !== 0) {
    const reason = blockedAddressReason(host);
    if (reason) throw new AddressBlockedError(host, reason);
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for `http.request` / `net.connect`: resolves the host and refuses it when any of its
 * addresses is blocked (so a host cannot smuggle a private address behind a public one), then hands
 * the checked addresses to the socket. Honours `all` (Node's happy-eyeballs asks for every address).
 */
export function guardedLookup(allowPrivate: boolean) {
  return (
    hostname: string,
    options: { family?: number | string; all?: boolean } | undefined,
    callback: LookupCallback,
  ): void => {
    const family =
      options?.family === "IPv4"
        ? 4
        : options?.family === "IPv6"
          ? 6
          : Number(options?.family ?? 0);
    dnsLookup(
      hostname,
      { all: true, family: family === 4 || family === 6 ? family : 0 },
      (error, addresses) => {
        if (error) return callback(error, []);
        if (addresses.length === 0) {
          const notFound: NodeJS.ErrnoException = new Error(`no address for ${hostname}`);
          notFound.code = "ENOTFOUND";
          return callback(notFound, []);
        }
        if (!allowPrivate) {
          for (const { address } of addresses) {
            const reason = blockedAddressReason(address);
            if (reason) {
              return callback(new AddressBlockedError(address, reason), []);
            }
          }
        }
        if (options?.all) return callback(null, addresses);
        const first = addresses[0] as LookupAddress;
        return callback(null, first.address, first.family);
      },
    );
  };
}
