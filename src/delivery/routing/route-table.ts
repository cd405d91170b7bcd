/**
 * Which route a message takes (docs/design.md "Routing, failover and prices"): the first route whose
 * match holds - every criterion given (destination country, number prefix, number type, sender),
 * any of its values - and the carriers it tries, in order. Pure.
 *
 * Checking 250 routes one by one for each of a batch's 10000 messages would cost more than storing
 * them, so candidates come from indexes: routes by country, a trie of route prefixes, and the few
 * routes with neither; only those are checked, in file order.
 *
 * A split route picks its first carrier by weight, deterministically from the message id (a
 * retry resolves the same): the id times the golden ratio, modulo 1, is spread evenly over any run
 * of ids (a Weyl sequence), so 1000 messages follow the weights to a few messages, where a hash
 * would be off by its randomness. The other carriers of the split follow as failover, in the
 * file's order.
 */
import type { NumberType } from "../../domain/destination.ts";
import type { RouteMatch, RouteSpec } from "./carrier-plan.ts";
import { PrefixTrie } from "./prefix-trie.ts";

/** What a message keeps of its route: the route's name and its carriers in the order to try. */
export interface ResolvedRoute {
  readonly name: string;
  readonly carriers: readonly string[];
}

export interface RoutedMessage {
  destination: {
    /** International digits, without `+`. */
    digits: string;
    country: string | undefined;
    /** Needed by routes that match on it. */
    numberType: NumberType | undefined;
  };
  sender: string;
  /** Picks a split route's carrier. */
  messageId: number;
}

interface CompiledRoute {
  index: number;
  countries: ReadonlySet<string> | undefined;
  prefixes: readonly string[] | undefined;
  numberTypes: ReadonlySet<NumberType> | undefined;
  senders: ReadonlySet<string> | undefined;
  /** Without a split: the one resolution, shared by every message. */
  fixed: ResolvedRoute | undefined;
  /** With a split: cumulative weights over 1, and the resolution for each pick. */
  bounds: readonly number[];
  picks: readonly ResolvedRoute[];
}

// 2^32 / golden ratio: the fractional parts of id * GOLDEN / 2^32 are a Weyl sequence.
const GOLDEN = 0x9e3779b9;
const TWO_TO_32 = 2 ** 32;

/** Where in [0, 1) the message id falls; consecutive ids are spread evenly. */
export function splitPoint(messageId: number): number {
  return (Math.imul(messageId, GOLDEN) >>> 0) / TWO_TO_32;
}

export class RouteTable {
  private readonly routes: CompiledRoute[];
  private readonly byCountry = new Map<string, number[]>();
  private readonly byPrefix = new PrefixTrie<number[]>();
  /** Routes with neither countries nor prefixes (by number type or sender; the default). */
  private readonly unindexed: number[] = [];
  private readonly hasPrefixes: boolean;

  constructor(routes: readonly RouteSpec[]) {
    if (routes.length === 0 || routes[routes.length - 1]?.match !== undefined) {
      throw new Error("the last route must be the default route, with no match");
    }
    this.routes = routes.map((route, index) => compileRoute(route, index));
    for (const route of this.routes) {
      if (route.countries) {
        for (const country of route.countries) appendTo(this.byCountry, country, route.index);
      } else if (route.prefixes) {
        for (const prefix of route.prefixes) {
          this.byPrefix.set(prefix, [route.index], (old, add) => [...old, ...add]);
        }
      } else this.unindexed.push(route.index);
    }
    this.hasPrefixes = this.routes.some((r) => r.prefixes);
  }

  resolve(message: RoutedMessage): ResolvedRoute {
    const route = this.routes[this.firstMatch(message)] as CompiledRoute;
    if (route.fixed) return route.fixed;
    const point = splitPoint(message.messageId);
    let pick = 0;
    while (pick < route.bounds.length - 1 && point >= (route.bounds[pick] as number)) pick++;
    return route.picks[pick] as ResolvedRoute;
  }

  /** The index of the first route that matches (the default one at the latest). */
  private firstMatch(message: RoutedMessage): number {
    // Plain loops: this runs for each of a batch's 10000 messages.
    let best = this.routes.length - 1;
    for (const i of this.unindexed) {
      if (this.matches(i, message)) {
        best = i;
        break;
      }
    }
    const country = message.destination.country;
    const byCountry = country === undefined ? undefined : this.byCountry.get(country);
    if (byCountry) best = this.firstOf(byCountry, best, message);
    if (this.hasPrefixes) {
      for (const indexes of this.byPrefix.allMatches(message.destination.digits)) {
        best = this.firstOf(indexes, best, message);
      }
    }
    return best;
  }

  /** The first of `indexes` (ascending) before `best` that matches, else `best`. */
  private firstOf(indexes: readonly number[], best: number, message: RoutedMessage): number {
    for (const i of indexes) {
      if (i >= best) break;
      if (this.matches(i, message)) return i;
    }
    return best;
  }

  private matches(index: number, message: RoutedMessage): boolean {
    const route = this.routes[index] as CompiledRoute;
    const { digits, country, numberType } = message.destination;
    if (route.countries && (country === undefined || !route.countries.has(country))) return false;
    if (route.prefixes && !route.prefixes.some((p) => digits.startsWith(p))) return false;
    if (route.numberTypes && !typeMatches(route.numberTypes, numberType)) return false;
    if (route.senders && !route.senders.has(message.sender)) return false;
    return true;
  }
}

/**
 * libphonenumber cannot tell fixed lines from mobiles in some countries (every US number is
 * FIXED_LINE_OR_MOBILE): such a number matches a route for either.
 */
function typeMatches(types: ReadonlySet<NumberType>, type: NumberType | undefined): boolean {
  if (type === undefined) return false;
  if (types.has(type)) return true;
  return type === "FIXED_LINE_OR_MOBILE" && (types.has("MOBILE") || types.has("FIXED_LINE"));
}

function compileRoute(route: RouteSpec, index: number): CompiledRoute {
  const match: RouteMatch = route.match ?? {};
  const set = <T>(values: readonly T[] | undefined) => (values ? new Set(values) : undefined);
  const compiled = {
    index,
    countries: set(match.countries),
    prefixes: match.prefixes,
    numberTypes: set(match.numberTypes),
    senders: set(match.senders),
  };
  if (!route.split) {
    const fixed = Object.freeze({ name: route.name, carriers: Object.freeze([...route.carriers]) });
    return { ...compiled, fixed, bounds: [], picks: [] };
  }
  const total = route.split.reduce((sum, s) => sum + s.weight, 0);
  let cumulative = 0;
  const bounds = route.split.map((s) => {
    cumulative += s.weight;
    return cumulative / total;
  });
  // Each pick first, then the route's other carriers in the file's order.
  const picks = route.split.map(({ carrier }) =>
    Object.freeze({
      name: route.name,
      carriers: Object.freeze([carrier, ...route.carriers.filter((c) => c !== carrier)]),
    }),
  );
  return { ...compiled, fixed: undefined, bounds, picks };
}

function appendTo(map: Map<string, number[]>, key: string, value: number): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
