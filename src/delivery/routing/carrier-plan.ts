/**
 * What the service knows of its carriers, routes and prices (docs/design.md "Routing, failover and
 * prices"), in one shape whether it came from `SMS_CARRIERS_FILE` (config/carriers-file.ts) or
 * from the one-carrier shorthand `SMS_CARRIER` / `SMS_SMPP_*` (`singleCarrierPlan`). Plain data,
 * checked once at start: names are unique, every route's carriers exist, the last route is the
 * default, prices are whole micro-units.
 */

import type { NumberType } from "../../domain/destination.ts";
import type { MultipartReceipts, ReceiptIdMatching } from "../../domain/receipt-ids.ts";
import type { RiskSettings } from "../../domain/risk-settings.ts";
import type { DefaultAlphabet } from "../../smpp/alphabets.ts";
import type { SmppEndpoint } from "../../smpp/endpoint.ts";
import type { NationalNumbering } from "../../smpp/numbering.ts";

/** An SMSC account over SMPP 3.4 (the fields of `SMS_SMPP_*`). */
export interface SmppSettings {
  endpoint: SmppEndpoint;
  systemType: string;
  binds: number;
  /** Unacknowledged submit_sm per bind. */
  window: number;
  /** submit_sm per second per bind; undefined: no limit. */
  tps: number | undefined;
  enquireLinkS: number;
  concatenation: "sar" | "udh";
  /** How receipt ids are matched to submit_sm_resp ids (adapter: receipt-ids.ts). */
  receiptIds: ReceiptIdMatching;
  /** `any`: one final receipt of any part settles a multi-part message; `each`: every part's own. */
  multipartReceipts: MultipartReceipts;
  /** The carrier's country, for MO destinations written as national numbers (TON 0 and 2). */
  numbering?: NationalNumbering;
}

/** The simulator as a carrier (`url: simulator`), for demos and tests. */
export interface SimulatorSettings {
  /** Parts in flight at most. */
  window: number;
  /** Parts per second it accepts; undefined: no limit. */
  tps: number | undefined;
}

interface CarrierBase {
  /** Unique; the `carrier` label of the metrics, stored with each message's route. */
  name: string;
  /** What an MO's data_coding 0 means on this carrier; undefined: SMS_MO_DEFAULT_ALPHABET. */
  moAlphabet: DefaultAlphabet | undefined;
}

export type CarrierSpec =
  | (CarrierBase & { kind: "smpp"; smpp: SmppSettings })
  | (CarrierBase & { kind: "simulator"; simulator: SimulatorSettings });

export interface RouteMatch {
  /** ISO 3166-1 alpha-2, as libphonenumber parses the number (so +44 7911 may be GG). */
  countries?: readonly string[];
  /** International digits without `+` (the file's "+4915" is "4915"). */
  prefixes?: readonly string[];
  numberTypes?: readonly NumberType[];
  /** The message's sender, exactly. */
  senders?: readonly string[];
}

export interface WeightedCarrier {
  carrier: string;
  /** Positive; shares are weight / sum of the route's weights. */
  weight: number;
}

export interface RouteSpec {
  name: string;
  /** Every given criterion must hold (any of its values); undefined only on the last route. */
  match: RouteMatch | undefined;
  /**
   * The carriers in failover order. For a split route, the split's carriers in the file's order:
   * the weighted pick goes first, the others follow in this order.
   */
  carriers: readonly string[];
  /** Weighted split instead of a fixed first carrier. */
  split: readonly WeightedCarrier[] | undefined;
}

/** Prices per part, in micro-units of the account's credit (1 credit = 1000000). */
export interface PriceSpec {
  /** undefined: a destination with no country or prefix price is refused. */
  defaultMicros: number | undefined;
  /** By ISO 3166-1 alpha-2 country. */
  countries: ReadonlyMap<string, number>;
  /** By international digits without `+`; the longest matching prefix beats the country. */
  prefixes: ReadonlyMap<string, number>;
}

export interface FailoverSettings {
  /** A carrier with no bound bind for this long gets no new work. */
  afterSeconds: number;
  /** The circuit counts this many of the carrier's last submissions. */
  circuitWindow: number;
  /** An open circuit is half-open after this long. */
  circuitOpenSeconds: number;
}

export interface CarrierPlan {
  /** Where it came from, for logs and errors: the file's path, or the shorthand's variables. */
  source: string;
  carriers: readonly CarrierSpec[];
  /** First match wins; the last has no match. */
  routes: readonly RouteSpec[];
  prices: PriceSpec;
  failover: FailoverSettings;
  /** The toll-fraud guard's `risk:` settings (money/toll-fraud-guard.ts); absent: the defaults. */
  risk?: RiskSettings;
}

export const DEFAULT_FAILOVER: FailoverSettings = Object.freeze({
  afterSeconds: 15,
  circuitWindow: 50,
  circuitOpenSeconds: 30,
});

/** The simulator's window when none is given (SimulatorCarrier's default). */
export const SIMULATOR_WINDOW = 500;

export const DEFAULT_ROUTE = "default";

/**
 * `SMS_CARRIER` / `SMS_SMPP_*` as a plan: one carrier named after its kind (`simulator` or
 * `smpp`, the names its metrics had before), one default route, one price for every destination.
 */
export function singleCarrierPlan(options: {
  smpp: SmppSettings | undefined;
  simTps: number | undefined;
  pricePerPartMicros: number;
}): CarrierPlan {
  const carrier: CarrierSpec = options.smpp
    ? { name: "smpp", moAlphabet: undefined, kind: "smpp", smpp: options.smpp }
    : {
        name: "simulator",
        moAlphabet: undefined,
        kind: "simulator",
        simulator: { window: SIMULATOR_WINDOW, tps: options.simTps },
      };
  return {
    source: options.smpp ? "SMS_CARRIER=smpp" : "SMS_CARRIER=simulator",
    carriers: [carrier],
    routes: [{ name: DEFAULT_ROUTE, match: undefined, carriers: [carrier.name], split: undefined }],
    prices: {
      defaultMicros: options.pricePerPartMicros,
      countries: new Map(),
      prefixes: new Map(),
    },
    failover: DEFAULT_FAILOVER,
  };
}
