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

/** A message's refusal by the account's controls, or undefined when they allow it. */
export function spendRefusal(
  controls: SpendControlsDoc | undefined,
  message: { country: string | undefined; priceMicros: number },
): SpendRefusal | undefined {
  if (!controls) return undefined;
  const allowed = controls.allowedCountries;
  if (allowed && allowed.length > 0) {
    const country = countryOf(message.country);
    if (!allowed.includes(country)) {
      return {
        reason: "COUNTRY_NOT_ALLOWED",
        message: `to is in ${country}, which is not among the account's allowed countries (${allowed.join(", ")})`,
      };
    }
  }
  const max = controls.maxPricePerMessageMicros;
  if (max !== undefined && message.priceMicros > max) {
    return {
      reason: "PRICE_ABOVE_LIMIT",
      message: `this message costs ${units(message.priceMicros)}, above the account's maxPricePerMessage of ${units(max)}`,
    };
  }
  return undefined;
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
