/**
 * The price of one part to a destination (docs/design.md "Routing, failover and prices"): the longest
 * matching prefix, else the destination's country, else the default; none of them: the
 * destination is refused. In micro-units of the account's credit.
 */
import type { PriceSpec } from "./carrier-plan.ts";
import { PrefixTrie } from "./prefix-trie.ts";

export class PriceTable {
  private readonly prefixes = new PrefixTrie<number>();
  private readonly hasPrefixes: boolean;

  constructor(private readonly spec: PriceSpec) {
    for (const [prefix, micros] of spec.prefixes) this.prefixes.set(prefix, micros);
    this.hasPrefixes = spec.prefixes.size > 0;
  }

  /** Micro-units per part to `digits` (international, without `+`); undefined: no price. */
  pricePerPart(digits: string, country: string | undefined): number | undefined {
    const byPrefix = this.hasPrefixes ? this.prefixes.longest(digits) : undefined;
    if (byPrefix !== undefined) return byPrefix;
    const byCountry = country === undefined ? undefined : this.spec.countries.get(country);
    return byCountry ?? this.spec.defaultMicros;
  }
}
