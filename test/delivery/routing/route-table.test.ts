import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RouteSpec } from "../../../src/delivery/routing/carrier-plan.ts";
import {
  type RoutedMessage,
  RouteTable,
  splitPoint,
} from "../../../src/delivery/routing/route-table.ts";
import {
  describeDestination,
  NUMBER_TYPES,
  type NumberType,
} from "../../../src/domain/destination.ts";

// Route resolution (issue 27, item 3): first match on country (as parsed), prefix, number type
// and sender; failover order or a weighted split, the same for the same message id.

const route = (
  name: string,
  match: RouteSpec["match"],
  carriers: string[],
  split?: Record<string, number>,
): RouteSpec => ({
  name,
  match,
  carriers,
  split: split && Object.entries(split).map(([carrier, weight]) => ({ carrier, weight })),
});

const message = (to: string, sender = "SMSINFO", messageId = 1): RoutedMessage => ({
  destination: { ...describeDestination(to), digits: to.replace(/^\+/, "") },
  sender,
  messageId,
});

const TABLE = new RouteTable([
  route("guernsey", { countries: ["GG"] }, ["gamma"]),
  route("germany-mobile", { countries: ["DE"], numberTypes: ["MOBILE"] }, ["alpha", "beta"]),
  route("uk-mobile", { prefixes: ["447"], numberTypes: ["MOBILE"] }, ["beta", "alpha"]),
  route("us-mobile", { countries: ["US"], numberTypes: ["MOBILE"] }, ["gamma", "beta"]),
  route("alerts", { senders: ["ALERTS"] }, ["gamma"]),
  route("default", undefined, ["alpha"]),
]);

describe("RouteTable", () => {
  it("takes the first route that matches, by the parsed country", () => {
    // +44 7911 is Guernsey's: the GG route, though the UK prefix route matches too (later).
    expect(TABLE.resolve(message("+447911123456")).name).toBe("guernsey");
    expect(TABLE.resolve(message("+447400123456"))).toEqual({
      name: "uk-mobile",
      carriers: ["beta", "alpha"],
    });
  });

  it("checks every criterion of a match", () => {
    expect(TABLE.resolve(message("+4915112345678")).name).toBe("germany-mobile");
    // A German fixed line: the country matches, the type does not.
    expect(TABLE.resolve(message("+493012345678")).name).toBe("default");
    expect(TABLE.resolve(message("+493012345678", "ALERTS")).name).toBe("alerts");
    expect(TABLE.resolve(message("+4915112345678", "ALERTS")).name).toBe("germany-mobile");
  });

  it("lets a number that may be either a fixed line or a mobile match a MOBILE route", () => {
    expect(describeDestination("+12133734253").numberType).toBe("FIXED_LINE_OR_MOBILE");
    expect(TABLE.resolve(message("+12133734253")).name).toBe("us-mobile");
  });

  it("sends the simulator's +999 numbers, which have no country, by the default route", () => {
    expect(TABLE.resolve(message("+99912345671"))).toEqual({
      name: "default",
      carriers: ["alpha"],
    });
  });

  it("needs the default route last", () => {
    expect(() => new RouteTable([route("de", { countries: ["DE"] }, ["a"])])).toThrow(/last route/);
  });

  it("splits by weight, within 10 % of the weights over 1000 messages", () => {
    const table = new RouteTable([
      route("default", undefined, ["alpha", "beta"], { alpha: 70, beta: 30 }),
    ]);
    const counts = { alpha: 0, beta: 0 };
    for (let id = 5000; id < 6000; id++) {
      const resolved = table.resolve(message("+4915112345678", "X", id));
      const first = resolved.carriers[0] as "alpha" | "beta";
      counts[first]++;
      // The other carrier follows as failover.
      expect(resolved.carriers).toEqual(first === "alpha" ? ["alpha", "beta"] : ["beta", "alpha"]);
    }
    expect(counts.alpha).toBeGreaterThanOrEqual(630);
    expect(counts.alpha).toBeLessThanOrEqual(770);
    expect(counts.beta).toBeGreaterThanOrEqual(270);
    expect(counts.beta).toBeLessThanOrEqual(330);
  });

  it("splits any weights within 10 % over any 1000 messages, and the same id the same way", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 2, maxLength: 5 }),
        fc.integer({ min: 1, max: 2 ** 40 }),
        // Multi-part messages take several ids: every step of ids between messages.
        fc.integer({ min: 1, max: 11 }),
        (weights, start, step) => {
          const total = weights.reduce((a, b) => a + b, 0);
          fc.pre(weights.every((w) => w / total >= 0.05));
          const names = weights.map((_, i) => `c${i}`);
          const split = Object.fromEntries(names.map((n, i) => [n, weights[i] as number]));
          const table = new RouteTable([route("default", undefined, names, split)]);
          const counts = new Map<string, number>();
          const msg = message("+4915112345678", "X");
          let unstable = 0;
          for (let k = 0; k < 1000; k++) {
            msg.messageId = start + k * step;
            const first = table.resolve(msg).carriers[0] as string;
            counts.set(first, (counts.get(first) ?? 0) + 1);
            if (table.resolve(msg).carriers[0] !== first) unstable++;
          }
          expect(unstable).toBe(0);
          names.forEach((name, i) => {
            const expected = (1000 * (weights[i] as number)) / total;
            expect(Math.abs((counts.get(name) ?? 0) - expected)).toBeLessThanOrEqual(
              0.1 * expected,
            );
          });
        },
      ),
      { numRuns: 200 },
    );
  });

  it("spreads split points over [0, 1)", () => {
    for (const id of [1, 2, 3, 2 ** 31, 2 ** 32 + 7, Number.MAX_SAFE_INTEGER]) {
      const point = splitPoint(id);
      expect(point).toBeGreaterThanOrEqual(0);
      expect(point).toBeLessThan(1);
    }
  });

  it("resolves as a scan of every route in order would, whatever the routes", () => {
    const countries = ["DE", "GB", "GG", "US", "CA", "FR"];
    const prefixes = ["4", "44", "447", "4915", "1", "33", "999"];
    const senders = ["A", "B"];
    const types: NumberType[] = ["MOBILE", "FIXED_LINE", "FIXED_LINE_OR_MOBILE", "TOLL_FREE"];
    const subset = <T>(values: T[]) =>
      fc.option(fc.subarray(values, { minLength: 1 }), { nil: undefined });
    const matchArb = fc.record(
      {
        countries: subset(countries),
        prefixes: subset(prefixes),
        numberTypes: subset(types),
        senders: subset(senders),
      },
      { requiredKeys: [] },
    );
    const numbers = [
      "+447911123456",
      "+447400123456",
      "+441212345678",
      "+4915112345678",
      "+493012345678",
      "+12133734253",
      "+16135550123",
      "+33612345678",
      "+99912345671",
      "+18005550100",
    ];
    fc.assert(
      fc.property(
        fc.array(matchArb, { minLength: 0, maxLength: 12 }),
        fc.constantFrom(...numbers),
        fc.constantFrom(...senders, "C"),
        (matches, to, sender) => {
          const routes = [
            ...matches.map((m, i) => route(`r${i}`, m, ["x"])),
            route("default", undefined, ["x"]),
          ];
          const msg = message(to, sender);
          const scanned = routes.find((r) => scanMatches(r, msg)) as RouteSpec;
          expect(new RouteTable(routes).resolve(msg).name).toBe(scanned.name);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("knows every number type libphonenumber gives", () => {
    expect(NUMBER_TYPES).toContain("FIXED_LINE_OR_MOBILE");
  });
});

/** The definition, checked route by route. */
function scanMatches(r: RouteSpec, msg: RoutedMessage): boolean {
  const m = r.match;
  if (!m) return true;
  const { country, numberType } = msg.destination;
  if (m.countries && !(country && m.countries.includes(country))) return false;
  if (m.prefixes && !m.prefixes.some((p) => msg.destination.digits.startsWith(p))) return false;
  if (m.numberTypes) {
    const either =
      numberType === "FIXED_LINE_OR_MOBILE" &&
      (m.numberTypes.includes("MOBILE") || m.numberTypes.includes("FIXED_LINE"));
    if (!numberType || !(m.numberTypes.includes(numberType) || either)) return false;
  }
  if (m.senders && !m.senders.includes(msg.sender)) return false;
  return true;
}
