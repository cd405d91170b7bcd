/**
 * The account's spend controls (docs/design.md "Money", "Spend controls"): which countries it may
 * send to and the most one message may cost, checked at intake from the account's cached view;
 * the daily limit is held by the debit itself (store/charges.ts dailyLimitFilter), which is what
 * makes it exact across instances.
 */
import { Code } from "@connectrpc/connect";
import { fieldErrors, type Reason, WHOLE_REQUEST } from "../errors/api-errors.ts";
import { MICROS } from "../store/accounts.ts";
import type { SpendControlsDoc } from "../store/documents.ts";
import { countryOf } from "../store/ledger.ts";

/** Why a message is refused by the controls: the reason and what `errors.to` says. */
export interface SpendRefusal {
  reason: Extract<Reason, "COUNTRY_NOT_ALLOWED" | "PRICE_ABOVE_LIMIT">;
  message: string;
}

/** A message's refusal by the account's controls (its country and price), or undefined. */
export type SpendCheck = (
  country: string | undefined,
  priceMicros: number,
) => SpendRefusal | undefined;

/** Each account view's controls, compiled once (a view is kept 2 s: services/account-directory.ts). */
const compiled = new WeakMap<SpendControlsDoc, SpendCheck | null>();

/**
 * The account's controls as one check per message, compiled once per view: the allowed countries
 * as a set, nothing allocated for a message they allow. Undefined when no control is set.
 */
export function spendCheck(controls: SpendControlsDoc | undefined): SpendCheck | undefined {
  if (!controls) return undefined;
  let check = compiled.get(controls);
  if (check === undefined) {
    check = compile(controls);
    compiled.set(controls, check);
  }
  return check ?? undefined;
}

function compile(controls: SpendControlsDoc): SpendCheck | null {
  const list = controls.allowedCountries ?? [];
  const allowed = list.length > 0 ? new Set(list) : undefined;
  const max = controls.maxPricePerMessageMicros;
  if (!allowed && max === undefined) return null;
  return (country, priceMicros) => {
    if (allowed && !allowed.has(countryOf(country))) {
      return {
        reason: "COUNTRY_NOT_ALLOWED",
        message: `to is in ${countryOf(country)}, which is not among the account's allowed countries (${list.join(", ")})`,
      };
    }
    if (max !== undefined && priceMicros > max) {
      return {
        reason: "PRICE_ABOVE_LIMIT",
        message: `this message costs ${units(priceMicros)}, above the account's maxPricePerMessage of ${units(max)}`,
      };
    }
    return undefined;
  };
}

/** A message's refusal by the account's controls, or undefined when they allow it. */
export function spendRefusal(
  controls: SpendControlsDoc | undefined,
  message: { country: string | undefined; priceMicros: number },
): SpendRefusal | undefined {
  return spendCheck(controls)?.(message.country, message.priceMicros);
}

/** A single send's refusal: REST 400 `errors.to`, Connect FAILED_PRECONDITION with the reason. */
export const spendRefused = (refusal: SpendRefusal) =>
  fieldErrors(Code.FailedPrecondition, { to: refusal.message }, { reason: refusal.reason });

/** The daily limit would be passed: REST 402 `errors.request`, like missing credit. */
export const dailyLimitReached = (amountMicros: number, limitMicros: number | undefined) =>
  fieldErrors(
    Code.FailedPrecondition,
    {
      [WHOLE_REQUEST]: `this request costs ${units(amountMicros)}, which would pass the account's dailySpendLimit${
        limitMicros === undefined ? "" : ` of ${units(limitMicros)}`
      } for today (UTC)`,
    },
    { reason: "DAILY_SPEND_LIMIT" },
  );

export const units = (micros: number) => String(micros / MICROS);

/** ISO 3166-1 alpha-2 shape, or `ZZ` (numbers without a country). */
export const COUNTRY_CODE = /^[A-Z]{2}$/;
