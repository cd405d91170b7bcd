import { describe, expect, it } from "vitest";
import { parseCarriersFile } from "../../../src/config/carriers-file.ts";
import { singleCarrierPlan } from "../../../src/delivery/routing/carrier-plan.ts";
import { INVALID_FOR_COUNTRY, Routing } from "../../../src/delivery/routing/routing.ts";

// A destination at acceptance (issue 27, items 3, 5, 6): SMS_NUMBER_VALIDATION, its price per
// part or why it is refused, and its route.

const FILE = `carriers:
  - { name: alpha, url: "smpp://a:pw@smsc-a.example" }
  - { name: beta, url: "smpp://b:pw@smsc-b.example" }
routes:
  - { name: germany, match: { countries: [DE] }, carriers: [alpha, beta] }
  - { name: default, split: { alpha: 1, beta: 1 } }
prices:
  countries: { DE: 0.08, GB: 0.04 }
  prefixes: { "+4915": 0.09 }
`;
const defaults = { pricePerPartMicros: 1_000_000, simTps: undefined, env: {} };
const plan = parseCarriersFile(FILE, "test", defaults);
// Fits the API's format, and no numbering plan of Germany.
const INVALID_GERMAN = "+4900012345";

describe("Routing", () => {
  it("prices a destination by prefix, then country, and refuses one priced nowhere", () => {
    const routing = new Routing(plan);
    expect(routing.check("+4915112345678")).toEqual({
      destination: {
        digits: "4915112345678",
        country: "DE",
        // Not needed by this file's routes, nor by format validation: not told.
        numberType: undefined,
        pricePerPartMicros: 90_000,
      },
    });
    expect(routing.check("441212345678")).toMatchObject({
      destination: { country: "GB", pricePerPartMicros: 40_000 },
    });
    expect(routing.check("+33612345678")).toEqual({
      error: "to cannot be sent to: no price is set for country FR and there is no default price",
    });
    expect(routing.check("+99912345671")).toEqual({
      error: "to cannot be sent to: no price is set for this number and there is no default price",
    });
  });

  it("format validation takes any number of the API's format", () => {
    const routing = new Routing(plan, "format");
    expect(routing.check(INVALID_GERMAN)).toMatchObject({
      destination: { country: "DE", pricePerPartMicros: 80_000 },
    });
  });

  it("strict validation refuses numbers that fit no plan of their country", () => {
    const routing = new Routing(plan, "strict");
    expect(routing.check(INVALID_GERMAN)).toEqual({ error: INVALID_FOR_COUNTRY });
    expect(routing.check("+4915112345678")).toHaveProperty("destination");
    // +999 is no country's: refused where no simulator takes it...
    const priced = parseCarriersFile(`${FILE}  default: 1\n`, "test", defaults);
    expect(new Routing(priced, "strict").check("+99912345671")).toEqual({
      error: INVALID_FOR_COUNTRY,
    });
    // ...and kept for the simulator, at the default price, by the default route.
    const simulator = new Routing(
      singleCarrierPlan({ smpp: undefined, simTps: undefined, pricePerPartMicros: 1_000_000 }),
      "strict",
    );
    const checked = simulator.check("+99912345671");
    expect(checked).toMatchObject({
      destination: { country: undefined, numberType: undefined, pricePerPartMicros: 1_000_000 },
    });
    if (!("destination" in checked)) throw new Error("refused");
    expect(simulator.route(checked.destination, "SMSINFO", 1)).toEqual({
      name: "default",
      carriers: ["simulator"],
    });
    expect(simulator.check(INVALID_GERMAN)).toEqual({ error: INVALID_FOR_COUNTRY });
  });

  it("tells the number type where a route matches on it", () => {
    const typed = parseCarriersFile(
      FILE.replace("countries: [DE] }", "countries: [DE], numberTypes: [MOBILE] }"),
      "test",
      defaults,
    );
    const routing = new Routing(typed);
    const mobile = routing.check("+4915112345678");
    const fixed = routing.check("+493012345678");
    expect(mobile).toMatchObject({ destination: { numberType: "MOBILE" } });
    expect(fixed).toMatchObject({ destination: { numberType: "FIXED_LINE" } });
    if (!("destination" in mobile) || !("destination" in fixed)) throw new Error("refused");
    expect(routing.route(mobile.destination, "X", 1).name).toBe("germany");
    expect(routing.route(fixed.destination, "X", 1).name).toBe("default");
  });

  it("routes a checked destination by its route table", () => {
    const routing = new Routing(plan);
    const german = routing.check("+4915112345678");
    const british = routing.check("+442071234567");
    if (!("destination" in german) || !("destination" in british)) throw new Error("refused");
    expect(routing.route(german.destination, "X", 1)).toEqual({
      name: "germany",
      carriers: ["alpha", "beta"],
    });
    const firsts = new Set(
      [1, 2, 3, 4].map((id) => routing.route(british.destination, "X", id).carriers[0]),
    );
    expect(firsts).toEqual(new Set(["alpha", "beta"]));
  });
});
