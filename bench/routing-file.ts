/**
 * A carriers file as large as operators write them (issue 27's figure 18): a route per country
 * for 249 countries, in turns over the given carriers, then the default route; a price for each
 * of 250 countries and 250 prefixes. With `numberTypes`, each country's route is for its mobiles
 * and fixed lines only, which makes every message's number type needed (1 to 10 µs more).
 */
import { getCountries } from "libphonenumber-js/max";

export function largeCarriersFile(
  carriers: { name: string; url: string }[],
  options: { numberTypes?: boolean } = {},
): string {
  const types = options.numberTypes ? ", numberTypes: [MOBILE, FIXED_LINE]" : "";
  const countries = getCountries().slice(0, 250);
  const names = carriers.map((c) => c.name);
  const lines = ["carriers:"];
  for (const c of carriers) lines.push(`  - { name: ${c.name}, url: "${c.url}" }`);
  lines.push("routes:");
  countries.slice(0, 249).forEach((country, i) => {
    const order = [...names.slice(i % names.length), ...names.slice(0, i % names.length)];
    lines.push(
      `  - { name: r-${country}, match: { countries: [${country}]${types} }, carriers: [${order.join(", ")}] }`,
    );
  });
  lines.push(`  - { name: default, carriers: [${names.join(", ")}] }`);
  lines.push("prices:", "  default: 1", "  countries:");
  countries.forEach((country, i) => {
    lines.push(`    ${country}: ${(0.01 + i / 1000).toFixed(3)}`);
  });
  lines.push("  prefixes:");
  for (let i = 0; i < 250; i++) lines.push(`    "+${100 + i * 3}${i % 10}": 0.5`);
  return `${lines.join("\n")}\n`;
}
