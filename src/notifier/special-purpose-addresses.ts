/**
 * Which IP addresses are globally reachable, after the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries (RFC 6890): an address inside a block whose "Globally Reachable" is False, N/A or
 * empty (a terminated block) is not, unless a more specific block says True.
 *
 * ipaddr.js names most blocks (`range()`); the table below adds the registry rows it does not
 * tell apart. Beyond the registries: IPv4 multicast, and IPv6 outside 2000::/3 (the IANA IPv6
 * Address Space's only Global Unicast block: the rest is reserved by the IETF, multicast or local).
 */
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** ipaddr.js range names of globally reachable blocks ("unicast": in no special block). */
const REACHABLE_RANGES: ReadonlySet<string> = new Set([
  "unicast",
  "as112", // 192.31.196.0/24 AS112-v4, 192.175.48.0/24 Direct Delegation AS112 Service
  "amt", // 192.52.193.0/24, 2001:3::/32 AMT
  "as112v6", // 2001:4:112::/48 AS112-v6, 2620:4f:8000::/48 Direct Delegation AS112 Service
  "orchid2", // 2001:20::/28 ORCHIDv2
  "droneRemoteIdProtocolEntityTags", // 2001:30::/28 DETs
]);

/**
 * Registry rows that ipaddr.js does not name apart from the block around them: checked first.
 * [block, registry name, globally reachable].
 */
const MORE_SPECIFIC: ReadonlyArray<readonly [string, string, boolean]> = [
  // Inside 192.0.0.0/24 IETF Protocol Assignments (ipaddr.js: "reserved").
  ["192.0.0.9/32", "Port Control Protocol Anycast", true],
  ["192.0.0.10/32", "Traversal Using Relays around NAT Anycast", true],
  // Inside 2001::/23 IETF Protocol Assignments (ipaddr.js: "reserved").
  ["2001:1::1/128", "Port Control Protocol Anycast", true],
  ["2001:1::2/128", "Traversal Using Relays around NAT Anycast", true],
  ["2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", true],
  // ipaddr.js calls both translation prefixes "rfc6052"; only 64:ff9b::/96 is reachable.
  ["64:ff9b:1::/48", "IPv4-IPv6 Translat. (local use)", false],
  // Not in ipaddr.js 2.5 ("unicast"); outside 2000::/3 anyway.
  ["100:0:0:1::/64", "Dummy IPv6 Prefix", false],
];

const MORE_SPECIFIC_BLOCKS = MORE_SPECIFIC.map(
  ([block, name, reachable]) => [ipaddr.parseCIDR(block), name, reachable] as const,
);

const GLOBAL_UNICAST = ipaddr.parseCIDR("2000::/3");
const WELL_KNOWN_TRANSLATION = ipaddr.parseCIDR("64:ff9b::/96");

/**
 * The address Node would connect to, or undefined when the text is not an IP address. IPv6 goes
 * through the WHATWG URL parser first: ipaddr.js reads the deprecated `::a.b.c.d` form as
 * IPv4-mapped, which it is not. A zone (`%eth0`) is dropped: the address decides.
 */
export function parseAddress(text: string): Address | undefined {
  const family = isIP(text);
  if (family === 4) return ipaddr.IPv4.parse(text);
  if (family !== 6) return undefined;
  const bare = text.replace(/%.*$/, "");
  return ipaddr.IPv6.parse(new URL(`http://[${bare}]/`).hostname.slice(1, -1));
}

/**
 * The name of the block that makes an address not globally reachable (the registry's name where
 * ipaddr.js lacks one, else ipaddr.js's range name, e.g. "loopback", "reserved"), or undefined
 * when it is globally reachable.
 */
export function nonGlobalBlock(address: Address): string | undefined {
  for (const [block, name, reachable] of MORE_SPECIFIC_BLOCKS) {
    if (address.kind() === block[0].kind() && address.match(block)) {
      return reachable ? undefined : name;
    }
  }
  if (address instanceof ipaddr.IPv6) {
    if (address.match(WELL_KNOWN_TRANSLATION)) {
      // Reachable as the IPv4 address it translates to.
      const embedded = nonGlobalBlock(ipaddr.IPv4.parse(address.toByteArray().slice(12).join(".")));
      return embedded && `IPv4-IPv6 Translat. of ${embedded}`;
    }
    const range = address.range() as string;
    if (!REACHABLE_RANGES.has(range)) return range;
    return address.match(GLOBAL_UNICAST) ? undefined : "reserved by IETF (outside 2000::/3)";
  }
  const range = address.range() as string;
  return REACHABLE_RANGES.has(range) ? undefined : range;
}
