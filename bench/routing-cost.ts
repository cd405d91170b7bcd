// npx tsx bench/routing-cost.ts: what routing and pricing cost a message at acceptance, per
// message, with the one-carrier shorthand and with largeCarriersFile (250 routes, 250 + 250
// prices), beside the format check every message had before. Figures 1 and 2 spend about
// 180 us per request and 13 us per batch message (docs/benchmarks.md).

import { getCountries, getCountryCallingCode } from "libphonenumber-js/max";
import examples from "libphonenumber-js/mobile/examples";
import { parseCarriersFile } from "../src/config/carriers-file.ts";
import { singleCarrierPlan } from "../src/delivery/routing/carrier-plan.ts";
import { Routing } from "../src/delivery/routing/routing.ts";
import { isValidPhoneNumber } from "../src/domain/phone-numbers.ts";
import { largeCarriersFile } from "./routing-file.ts";

const MESSAGES = 10_000;
const ROUNDS = 15;

// Figure 2's numbers (bench/common.ts), and mobiles of every country.
const numbers = {
  "figure 2's +49151...": Array.from({ length: MESSAGES }, (_, i) => `+49151${10_000_000 + i}`),
  "every country's mobiles": Array.from({ length: MESSAGES }, (_, i) => {
    const countries = getCountries().filter((c) => (examples as Record<string, string>)[c]);
    const country = countries[i % countries.length] as (typeof countries)[number];
    const national = (examples as Record<string, string>)[country] as string;
    return `+${getCountryCallingCode(country)}${national.slice(0, -3)}${String(i % 1000).padStart(3, "0")}`;
  }),
};

const carriers = [
  { name: "a", url: "simulator" },
  { name: "b", url: "simulator" },
];
const defaults = { pricePerPartMicros: 1_000_000, simTps: undefined, env: {} };
const plans = {
  "one carrier": new Routing(
    singleCarrierPlan({ smpp: undefined, simTps: undefined, pricePerPartMicros: 1_000_000 }),
  ),
  "250 routes and prices": new Routing(
    parseCarriersFile(largeCarriersFile(carriers), "bench", defaults),
  ),
  "the same by number type": new Routing(
    parseCarriersFile(largeCarriersFile(carriers, { numberTypes: true }), "bench", defaults),
  ),
};

function perMessageUs(run: (to: string, id: number) => unknown, list: string[]): number {
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = performance.now();
    for (let i = 0; i < list.length; i++) run(list[i] as string, i + 1);
    times.push(((performance.now() - start) * 1000) / list.length);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

const rows: Record<string, Record<string, string>> = {};
for (const [label, list] of Object.entries(numbers)) {
  rows[label] = { "format check": perMessageUs((to) => isValidPhoneNumber(to), list).toFixed(2) };
  for (const [name, routing] of Object.entries(plans)) {
    const us = perMessageUs((to, id) => {
      const checked = routing.check(to);
      if ("destination" in checked) routing.route(checked.destination, "SMSINFO", id);
    }, list);
    (rows[label] as Record<string, string>)[name] = us.toFixed(2);
  }
}
console.log("median us per message over", ROUNDS, "rounds of", MESSAGES);
console.table(rows);
