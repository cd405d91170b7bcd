/**
 * Private-address protection for status callback URLs (design "Status webhooks"): a callback whose
 * host is, or resolves to, a loopback, private, link-local, unique-local, unspecified (or otherwise
 * non-public: shared CGNAT, multicast, reserved) address is refused unless `allowPrivate`.
 *
 * DNS rebinding: the check runs inside the socket's own `lookup`, so the connection goes to the very
 * address that was checked (no second resolution). IP literals never reach `lookup` (Node connects
 * to them directly), so `checkCallbackUrl` checks those before the request.
 */
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP } from "node:net";

export class AddressBlockedError extends Error {
  override readonly name = "AddressBlockedError";
  readonly code = "ERR_ADDRESS_BLOCKED";
}

/** The four bytes of a dotted-quad IPv4 address, or undefined. */
export function parseIPv4(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const bytes: number[] = [];
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    bytes.push(n);
  }
  return bytes;
}

/** The sixteen bytes of an IPv6 address (`::` compression, trailing dotted quad, `%zone` allowed). */
export function parseIPv6(text: string): number[] | undefined {
  let s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = s.indexOf("%");
  if (zone >= 0) s = s.slice(0, zone);
  if (isIP(s) !== 6) return undefined;
  const lastColon = s.lastIndexOf(":");
  const last = s.slice(lastColon + 1);
  if (last.includes(".")) {
    // Trailing dotted quad: rewrite as two hex groups.
    const v4 = parseIPv4(last);
    if (!v4) return undefined;
    const [a = 0, b = 0, c = 0, d = 0] = v4;
    s = `${s.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const toGroups = (part: string) =>
    part === "" ? [] : part.split(":").map((g) => Number.parseInt(g, 16));
  const headGroups = toGroups(halves[0] ?? "");
  const restGroups = halves.length === 2 ? toGroups(halves[1] ?? "") : [];
  const fill = halves.length === 2 ? 8 - headGroups.length - restGroups.length : 0;
  if (fill < 0) return undefined;
  const groups = [...headGroups, ...new Array<number>(fill).fill(0), ...restGroups];
  if (groups.length !== 8 || groups.some((g) => !(g >= 0 && g <= 0xffff))) return undefined;
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

/** Why an IPv4 address (4 bytes) is refused, or undefined when it is public. */
function ipv4Block(b: readonly number[]): string | undefined {
  const [a = 0, c = 0] = b;
  if (a === 0) return "unspecified";
  if (a === 10) return "private";
  if (a === 100 && c >= 64 && c <= 127) return "shared (CGNAT)";
  if (a === 127) return "loopback";
  if (a === 169 && c === 254) return "link-local";
  if (a === 172 && c >= 16 && c <= 31) return "private";
  if (a === 192 && c === 0 && b[2] === 0) return "reserved";
  if (a === 192 && c === 168) return "private";
  if (a === 198 && (c === 18 || c === 19)) return "benchmarking";
  if (a >= 224 && a <= 239) return "multicast";
  if (a >= 240) return "reserved";
  return undefined;
}

function ipv6Block(b: readonly number[]): string | undefined {
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zeros(0, 16)) return "unspecified";
  if (zeros(0, 15) && b[15] === 1) return "loopback";
  // IPv4-mapped ::ffff:a.b.c.d and the deprecated IPv4-compatible ::a.b.c.d
  if (zeros(0, 10) && ((b[10] === 0xff && b[11] === 0xff) || (b[10] === 0 && b[11] === 0))) {
    const v4 = ipv4Block(b.slice(12));
    return v4 && `IPv4-embedded ${v4}`;
  }
  // NAT64 64:ff9b::/96 embeds an IPv4 address; 64:ff9b:1::/48 is for local use
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b) {
    if (zeros(4, 12)) {
      const v4 = ipv4Block(b.slice(12));
      return v4 && `NAT64 ${v4}`;
    }
    if (b[4] === 0 && b[5] === 1) return "NAT64 local-use";
  }
  // 6to4 2002:a.b.c.d::/48
  if (b[0] === 0x20 && b[1] === 0x02) {
    const v4 = ipv4Block(b.slice(2, 6));
    return v4 && `6to4 ${v4}`;
  }
  if (b[0] === 0x01 && zeros(1, 8)) return "discard-only";
  const first = b[0] ?? 0;
  const second = b[1] ?? 0;
  if ((first & 0xfe) === 0xfc) return "unique-local";
  if (first === 0xfe && (second & 0xc0) === 0x80) return "link-local";
  if (first === 0xfe && (second & 0xc0) === 0xc0) return "site-local";
  if (first === 0xff) return "multicast";
  return undefined;
}

/**
 * Why an IP address is not a public unicast address (e.g. "loopback", "private"), or undefined
 * when it is one. A string that is not an IP address is refused as "not an IP address".
 */
export function blockedAddressReason(address: string): string | undefined {
  const v4 = parseIPv4(address);
  if (v4) return ipv4Block(v4);
  const v6 = parseIPv6(address);
  if (v6) return ipv6Block(v6);
  return "not an IP address";
}

export function isBlockedAddress(address: string): boolean {
  return blockedAddressReason(address) !== undefined;
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
    if (reason) throw new AddressBlockedError(`callback address ${host} refused: ${reason}`);
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
              return callback(
                new AddressBlockedError(
                  `callback host ${hostname} resolves to ${address}: ${reason}`,
                ),
                [],
              );
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
