/**
 * The address guard against the IANA special-purpose address registries (issue 25 item 2.5):
 * every row of both registries, as published (iana-ipv4-special-registry and
 * iana-ipv6-special-registry, 25 rows each), is walked, and the first, a middle and the last
 * address of each block must be refused exactly when the most specific row holding it says
 * "Globally Reachable" False, N/A or empty (a terminated block). The IPv4-mapped, translated
 * (64:ff9b::/96) and 6to4 forms of every IPv4 sample are checked too.
 */
import { describe, expect, it } from "vitest";
import {
  AddressBlockedError,
  blockedAddressReason,
  checkCallbackUrl,
} from "../../src/notifier/address-guard.ts";

/** [block, name, globally reachable]: false stands for False, N/A and empty alike. */
type Row = readonly [block: string, name: string, reachable: boolean];

const IPV4_REGISTRY: readonly Row[] = [
  ["0.0.0.0/8", '"This network"', false],
  ["0.0.0.0/32", '"This host on this network"', false],
  ["10.0.0.0/8", "Private-Use", false],
  ["100.64.0.0/10", "Shared Address Space", false],
  ["127.0.0.0/8", "Loopback", false],
  ["169.254.0.0/16", "Link Local", false],
  ["172.16.0.0/12", "Private-Use", false],
  ["192.0.0.0/24", "IETF Protocol Assignments", false],
  ["192.0.0.0/29", "IPv4 Service Continuity Prefix", false],
  ["192.0.0.8/32", "IPv4 dummy address", false],
  ["192.0.0.9/32", "Port Control Protocol Anycast", true],
  ["192.0.0.10/32", "Traversal Using Relays around NAT Anycast", true],
  ["192.0.0.170/32", "NAT64/DNS64 Discovery", false],
  ["192.0.0.171/32", "NAT64/DNS64 Discovery", false],
  ["192.0.2.0/24", "Documentation (TEST-NET-1)", false],
  ["192.31.196.0/24", "AS112-v4", true],
  ["192.52.193.0/24", "AMT", true],
  ["192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", false], // terminated: empty
  ["192.88.99.2/32", "6a44-relay anycast address", false],
  ["192.168.0.0/16", "Private-Use", false],
  ["192.175.48.0/24", "Direct Delegation AS112 Service", true],
  ["198.18.0.0/15", "Benchmarking", false],
  ["198.51.100.0/24", "Documentation (TEST-NET-2)", false],
  ["203.0.113.0/24", "Documentation (TEST-NET-3)", false],
  ["240.0.0.0/4", "Reserved", false],
  ["255.255.255.255/32", "Limited Broadcast", false],
];

const IPV6_REGISTRY: readonly Row[] = [
  ["::1/128", "Loopback Address", false],
  ["::/128", "Unspecified Address", false],
  ["::ffff:0:0/96", "IPv4-mapped Address", false],
  ["64:ff9b::/96", "IPv4-IPv6 Translat.", true], // as the IPv4 address it embeds
  ["64:ff9b:1::/48", "IPv4-IPv6 Translat.", false],
  ["100::/64", "Discard-Only Address Block", false],
  ["100:0:0:1::/64", "Dummy IPv6 Prefix", false],
  ["2001::/23", "IETF Protocol Assignments", false],
  ["2001::/32", "TEREDO", false], // N/A
  ["2001:1::1/128", "Port Control Protocol Anycast", true],
  ["2001:1::2/128", "Traversal Using Relays around NAT Anycast", true],
  ["2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", true],
  ["2001:2::/48", "Benchmarking", false],
  ["2001:3::/32", "AMT", true],
  ["2001:4:112::/48", "AS112-v6", true],
  ["2001:10::/28", "Deprecated (previously ORCHID)", false], // terminated: empty
  ["2001:20::/28", "ORCHIDv2", true],
  ["2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", true],
  ["2001:db8::/32", "Documentation", false],
  ["2002::/16", "6to4", false], // N/A
  ["2620:4f:8000::/48", "Direct Delegation AS112 Service", true],
  ["3fff::/20", "Documentation", false],
  ["5f00::/16", "Segment Routing (SRv6) SIDs", false],
  ["fc00::/7", "Unique-Local", false],
  ["fe80::/10", "Link-Local Unicast", false],
];

// Address arithmetic of the test's own (BigInt), independent of the guard's library.

function ipv4Value(text: string): bigint {
  return text.split(".").reduce((value, octet) => (value << 8n) | BigInt(octet), 0n);
}

function ipv6Value(text: string): bigint {
  const [head = "", tail] = text.split("::");
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const headGroups = groups(head);
  const tailGroups = tail === undefined ? [] : groups(tail);
  const all = [
    ...headGroups,
    ...new Array<string>(8 - headGroups.length - tailGroups.length).fill("0"),
    ...tailGroups,
  ];
  return all.reduce((value, group) => (value << 16n) | BigInt(Number.parseInt(group, 16)), 0n);
}

function ipv4Text(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join(".");
}

function ipv6Text(value: bigint): string {
  const groups: string[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) {
    groups.push(((value >> shift) & 0xffffn).toString(16));
  }
  return groups.join(":");
}

interface Family {
  bits: bigint;
  rows: readonly Row[];
  value(text: string): bigint;
  text(value: bigint): string;
}

const IPV4: Family = { bits: 32n, rows: IPV4_REGISTRY, value: ipv4Value, text: ipv4Text };
const IPV6: Family = { bits: 128n, rows: IPV6_REGISTRY, value: ipv6Value, text: ipv6Text };

function span(family: Family, block: string): { first: bigint; last: bigint; length: bigint } {
  const [base = "", length = ""] = block.split("/");
  const hostBits = family.bits - BigInt(length);
  const first = family.value(base);
  return { first, last: first + (1n << hostBits) - 1n, length: BigInt(length) };
}

/** First, middle and last address of a block (one address for a /32 or /128). */
function samples(family: Family, block: string): bigint[] {
  const { first, last } = span(family, block);
  return [...new Set([first, first + (last - first + 1n) / 2n, last])];
}

/** What the registries say of an address: the most specific row holding it decides. */
function reachable(family: Family, value: bigint): boolean {
  let best: { length: bigint; row: Row } | undefined;
  for (const row of family.rows) {
    const { first, last, length } = span(family, row[0]);
    if (value >= first && value <= last && (!best || length > best.length)) best = { length, row };
  }
  if (!best) return family === IPV4 ? !isIPv4Multicast(value) : isGlobalUnicastSpace(value);
  if (family === IPV6 && best.row[0] === "64:ff9b::/96")
    return reachable(IPV4, value & 0xffffffffn);
  return best.row[2];
}

/** 224.0.0.0/4 is in the multicast registry, not the special-purpose one: never a webhook. */
function isIPv4Multicast(value: bigint): boolean {
  return value >> 28n === 0xen;
}

/** IANA IPv6 Address Space: 2000::/3 is the only Global Unicast block. */
function isGlobalUnicastSpace(value: bigint): boolean {
  return value >> 125n === 1n;
}

const cases = (family: Family) =>
  family.rows.flatMap(([block, name]) =>
    samples(family, block).map((value) => ({
      block,
      name,
      address: family.text(value),
      public: reachable(family, value),
    })),
  );

describe("every block of the IANA special-purpose registries", () => {
  it.each([...cases(IPV4), ...cases(IPV6)])(
    "$address in $block ($name): public $public",
    ({ address, public: isPublic }) => {
      const reason = blockedAddressReason(address);
      if (isPublic) expect(reason).toBeUndefined();
      else expect(reason).toBeTypeOf("string");
    },
  );

  it("refuses each documentation range the issue saw webhooks go to", () => {
    for (const address of ["192.0.2.2", "198.51.100.7", "203.0.113.200", "2001:db8::1"]) {
      expect(blockedAddressReason(address), address).toBeDefined();
    }
  });

  it("judges the IPv4-mapped, translated and 6to4 forms of every IPv4 sample", () => {
    for (const { address, public: isPublic } of cases(IPV4)) {
      const value = ipv4Value(address);
      const hex = `${(value >> 16n).toString(16)}:${(value & 0xffffn).toString(16)}`;
      // ::ffff:0:0/96 is not globally reachable, whatever it maps.
      expect(blockedAddressReason(`::ffff:${address}`), `::ffff:${address}`).toBeDefined();
      expect(blockedAddressReason(`::ffff:${hex}`), `::ffff:${hex}`).toBeDefined();
      // The deprecated IPv4-compatible form: outside 2000::/3.
      expect(blockedAddressReason(`::${address}`), `::${address}`).toBeDefined();
      // 64:ff9b::/96 is as reachable as the IPv4 address it carries.
      expect(blockedAddressReason(`64:ff9b::${address}`) === undefined, `64:ff9b::${address}`).toBe(
        isPublic,
      );
      // 6to4 is N/A in the registry: refused, whatever it embeds.
      expect(blockedAddressReason(`2002:${hex}::1`), `2002:${hex}::1`).toBeDefined();
    }
  });

  it("allows public addresses, and refuses IPv6 outside 2000::/3 and IPv4 multicast", () => {
    for (const address of [
      "8.8.8.8",
      "1.1.1.1",
      "172.32.0.1",
      "100.128.0.1",
      "198.20.0.1",
      "2001:4860:4860::8888",
      "2606:4700::1111",
      "2001:200::1",
      "64:ff9b::8.8.8.8",
    ]) {
      expect(blockedAddressReason(address), address).toBeUndefined();
    }
    for (const address of ["4000::1", "e000::1", "fec0::1", "ff02::1", "224.0.0.1", "239.1.1.1"]) {
      expect(blockedAddressReason(address), address).toBeDefined();
    }
  });

  it("reads addresses as Node connects to them: zones, dotted quads, and no text but addresses", () => {
    expect(blockedAddressReason("fe80::1%eth0")).toBeDefined();
    expect(blockedAddressReason("2001:4860:4860::8888%eth0")).toBeUndefined();
    expect(blockedAddressReason("::8.8.8.8")).toBeDefined();
    expect(blockedAddressReason("example.com")).toBe("not an IP address");
    expect(blockedAddressReason("127.1")).toBe("not an IP address");
  });

  it("refuses IP-literal callback URLs in every documentation range before connecting", () => {
    for (const url of [
      "http://192.0.2.2/hook",
      "http://198.51.100.1:8080/",
      "https://203.0.113.9/x",
      "http://[2001:db8::2]/",
      "http://[3fff::1]/",
      "http://[64:ff9b::c000:202]/",
      "http://[::c000:202]/",
      "http://3221225986/", // 192.0.2.2 as one number
    ]) {
      expect(() => checkCallbackUrl(new URL(url), false), url).toThrow(AddressBlockedError);
      expect(() => checkCallbackUrl(new URL(url), true), url).not.toThrow();
    }
    expect(() => checkCallbackUrl(new URL("http://192.0.0.9/"), false)).not.toThrow();
  });
});
