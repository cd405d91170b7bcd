/**
 * Routing and pricing of a destination at acceptance (docs/design.md "Routing, failover and prices"):
 * `check` before anything is stored or charged (number validation, the price per part, or why
 * the destination is refused), `route` once the message has its id. Pure; built once from the
 * CarrierPlan.
 */
import {
  describeDestination,
  destinationCountry,
  type NumberType,
} from "../../domain/destination.ts";
import type { CarrierPlan } from "./carrier-plan.ts";
import { PriceTable } from "./price-table.ts";
import { type ResolvedRoute, RouteTable } from "./route-table.ts";

export type NumberValidation = "format" | "strict";

/** A destination that may be sent to, and what one part costs. */
export interface PricedDestination {
  /** International digits, without `+`. */
  digits: string;
  /** As libphonenumber parses the number; undefined for none (e.g. +999). */
  country: string | undefined;
  /**
   * Told only where the plan needs it (a route by number type, strict validation): it costs
   * 1 to 10 µs a number, the country alone mostly nothing.
   */
  numberType: NumberType | undefined;
  pricePerPartMicros: number;
}

export const INVALID_FOR_COUNTRY =
  "to is not a valid phone number: it fits no numbering plan of its country code";

// The simulator's test numbers (delivery/simulator.ts): +999 is no country's calling code.
const SIMULATOR_NUMBERS = "999";

export class Routing {
  private readonly routes: RouteTable;
  private readonly prices: PriceTable;
  private readonly simulatorNumbersAllowed: boolean;
  private readonly needsType: boolean;

  constructor(
    readonly plan: CarrierPlan,
    private readonly validation: NumberValidation = "format",
  ) {
    this.routes = new RouteTable(plan.routes);
    this.prices = new PriceTable(plan.prices);
    // Strict validation keeps the simulator's numbers only where a simulator takes them.
    this.simulatorNumbersAllowed = plan.carriers.some((c) => c.kind === "simulator");
    this.needsType = validation === "strict" || plan.routes.some((r) => r.match?.numberTypes);
  }

  /**
   * The destination of `to` (already of the API's format) and its price per part, or the message
   * for `errors.to` when it is refused: invalid under strict validation, or priced nowhere.
   */
  check(
    to: string,
    withType = this.needsType,
  ): { destination: PricedDestination } | { error: string } {
    const digits = to.charCodeAt(0) === 43 /* + */ ? to.slice(1) : to;
    let country: string | undefined;
    let numberType: NumberType | undefined;
    if (withType) {
      const described = describeDestination(digits);
      if (this.validation === "strict" && !described.valid && !this.simulatorNumber(digits)) {
        return { error: INVALID_FOR_COUNTRY };
      }
      country = described.country;
      numberType = described.numberType;
    } else country = destinationCountry(digits);
    const pricePerPartMicros = this.prices.pricePerPart(digits, country);
    if (pricePerPartMicros === undefined) {
      const where = country ? `country ${country}` : "this number";
      return {
        error: `to cannot be sent to: no price is set for ${where} and there is no default price`,
      };
    }
    return { destination: { digits, country, numberType, pricePerPartMicros } };
  }

  /** check(), the number's type always told: for quotes, which show it. */
  quote(to: string): { destination: PricedDestination } | { error: string } {
    return this.check(to, true);
  }

  /** The route of an accepted message, from its checked destination, sender and id. */
  route(destination: PricedDestination, sender: string, messageId: number): ResolvedRoute {
    return this.routes.resolve({ destination, sender, messageId });
  }

  private simulatorNumber(digits: string): boolean {
    return this.simulatorNumbersAllowed && digits.startsWith(SIMULATOR_NUMBERS);
  }
}
