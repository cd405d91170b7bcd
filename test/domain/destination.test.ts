import fc from "fast-check";
import { getCountries, getCountryCallingCode } from "libphonenumber-js/max";
import examples from "libphonenumber-js/mobile/examples";
import { describe, expect, it } from "vitest";
import {
  describeDestination,
  destinationCountry,
  isKnownCountry,
  libraryDescription,
} from "../../src/domain/destination.ts";

// The destination's country, type and validity are libphonenumber's (max metadata), computed
// from plans compiled once (src/domain/destination.ts explains why).

const COUNTRIES = getCountries();
const EXAMPLES = examples as Record<string, string | undefined>;

/** Numbers near real ones: a country's example mobile number with some digits redrawn. */
const nearRealNumber = fc
  .record({
    country: fc.constantFrom(...COUNTRIES.filter((c) => EXAMPLES[c])),
    keep: fc.nat({ max: 12 }),
    tail: fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 8 }),
    first: fc.option(fc.integer({ min: 0, max: 9 })),
  })
  .map(({ country, keep, tail, first }) => {
    const example = EXAMPLES[country] ?? "";
    let national = example.slice(0, Math.min(keep, example.length)) + tail.join("");
    if (first !== null) national = `${first}${national.slice(1)}`;
    return `${getCountryCallingCode(country)}${national}`;
  })
  .filter((digits) => /^[1-9][0-9]{7,14}$/.test(digits));

/** Any number of the API's format. */
const anyNumber = fc.stringMatching(/^[1-9][0-9]{7,14}$/);

describe("describeDestination", () => {
  it("answers as libphonenumber does, for numbers near real ones", () => {
    fc.assert(
      fc.property(nearRealNumber, fc.boolean(), (digits, plus) => {
        expect(describeDestination(plus ? `+${digits}` : digits)).toEqual(
          libraryDescription(digits),
        );
      }),
      { numRuns: 20_000 },
    );
  });

  it("answers as libphonenumber does, for any number of the API's format", () => {
    fc.assert(
      fc.property(anyNumber, (digits) => {
        expect(describeDestination(digits)).toEqual(libraryDescription(digits));
      }),
      { numRuns: 20_000 },
    );
  });

  it("gives the same country alone, by destinationCountry", () => {
    fc.assert(
      fc.property(fc.oneof(nearRealNumber, anyNumber), (digits) => {
        expect(destinationCountry(digits)).toBe(libraryDescription(digits).country);
      }),
      { numRuns: 20_000 },
    );
  });

  it("gives the parsed country, not the calling code's main one", () => {
    expect(describeDestination("+447911123456")).toEqual({
      country: "GG",
      numberType: "MOBILE",
      valid: true,
    });
    expect(describeDestination("+447400123456")).toMatchObject({ country: "GB", valid: true });
    expect(describeDestination("+4915112345678")).toEqual({
      country: "DE",
      numberType: "MOBILE",
      valid: true,
    });
    // Every US number is FIXED_LINE_OR_MOBILE; Canada shares +1.
    expect(describeDestination("12133734253")).toMatchObject({
      country: "US",
      numberType: "FIXED_LINE_OR_MOBILE",
    });
    expect(describeDestination("+16135550123")).toMatchObject({ country: "CA" });
  });

  it("takes numbers with a national prefix after the calling code to the library itself", () => {
    // +7 8...: Russia's national prefix 8; every +54 number (Argentina's prefix rule).
    for (const digits of ["78005553535", "5491123456789", "541123456789"]) {
      expect(describeDestination(digits)).toEqual(libraryDescription(digits));
    }
  });

  it("gives no country to the simulator's +999 numbers, nor to non-geographic codes", () => {
    expect(describeDestination("+99912345671")).toEqual({
      country: undefined,
      numberType: undefined,
      valid: false,
    });
    expect(describeDestination("+80012345678")).toMatchObject({
      country: undefined,
      numberType: "TOLL_FREE",
      valid: true,
    });
  });

  it("knows ISO 3166-1 alpha-2 codes in capitals", () => {
    expect(isKnownCountry("GB")).toBe(true);
    expect(isKnownCountry("GG")).toBe(true);
    expect(isKnownCountry("UK")).toBe(false);
    expect(isKnownCountry("de")).toBe(false);
  });
});
