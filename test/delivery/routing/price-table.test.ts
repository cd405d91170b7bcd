import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PriceSpec } from "../../../src/delivery/routing/carrier-plan.ts";
import { PriceTable } from "../../../src/delivery/routing/price-table.ts";

// Prices per part (issue 27, item 5): the longest matching prefix, else the country, else the
// default; none: undefined, which refuses the destination.

const spec = (defaultMicros: number | undefined): PriceSpec => ({
  defaultMicros,
  countries: new Map([
    ["DE", 80_000],
    ["GB", 40_000],
  ]),
  prefixes: new Map([
    ["4915", 90_000],
    ["49151", 95_000],
    ["447", 45_000],
  ]),
});

describe("PriceTable", () => {
  const prices = new PriceTable(spec(1_000_000));

  it("takes the longest matching prefix before the country", () => {
    expect(prices.pricePerPart("4915112345678", "DE")).toBe(95_000);
    expect(prices.pricePerPart("4915212345678", "DE")).toBe(90_000);
    expect(prices.pricePerPart("493012345678", "DE")).toBe(80_000);
    // +44 7911 is GG, which has no price; the UK mobile prefix still applies.
    expect(prices.pricePerPart("447911123456", "GG")).toBe(45_000);
  });

  it("takes the default when neither a prefix nor the country has a price", () => {
    expect(prices.pricePerPart("33612345678", "FR")).toBe(1_000_000);
    expect(prices.pricePerPart("99912345671", undefined)).toBe(1_000_000);
  });

  it("has no price for such a destination without a default", () => {
    const strict = new PriceTable(spec(undefined));
    expect(strict.pricePerPart("33612345678", "FR")).toBeUndefined();
    expect(strict.pricePerPart("99912345671", undefined)).toBeUndefined();
    expect(strict.pricePerPart("441212345678", "GB")).toBe(40_000);
  });

  it("answers as the longest of all prefixes checked one by one, whatever the table", () => {
    const digitString = (max: number) =>
      fc
        .array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: max })
        .map((d) => d.join(""));
    fc.assert(
      fc.property(
        fc.dictionary(digitString(5), fc.nat({ max: 1_000_000 })),
        digitString(15),
        (prefixes, digits) => {
          const table = new PriceTable({
            defaultMicros: 7,
            countries: new Map(),
            prefixes: new Map(Object.entries(prefixes)),
          });
          const longest = Object.keys(prefixes)
            .filter((p) => digits.startsWith(p))
            .sort((a, b) => b.length - a.length)[0];
          expect(table.pricePerPart(digits, undefined)).toBe(
            longest === undefined ? 7 : prefixes[longest],
          );
        },
      ),
      { numRuns: 2000 },
    );
  });
});
