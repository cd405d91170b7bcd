/**
 * Changing an account's spend controls (docs/design.md "Money", "Spend controls"): the account's
 * own (AccountService, scope `full`) or the operator's. `null` clears a control.
 */
import type { Collection } from "mongodb";
import type { FieldMessages } from "../errors/api-errors.ts";
import type { AccountDoc, SpendControlsDoc } from "../store/documents.ts";
import { COUNTRY_CODE } from "./spend-controls.ts";

/** A change: a value sets a control, `null` clears it, absent leaves it. */
export interface SpendControlsChange {
  allowedCountries?: string[] | null;
  maxPricePerMessageMicros?: number | null;
  dailySpendLimitMicros?: number | null;
}

/** Largest amount a control takes: a billion credit units (keeps sums exact in doubles). */
const MAX_MICROS = 1e15;

/** What is wrong with a change, by proto field path; empty when nothing. */
export function spendControlsErrors(change: SpendControlsChange): FieldMessages {
  const errors: FieldMessages = {};
  const countries = change.allowedCountries;
  if (countries) {
    const bad = countries.filter((c) => !COUNTRY_CODE.test(c));
    if (bad.length > 0)
      errors["spend_controls.allowed_countries"] =
        `allowedCountries must hold ISO 3166 alpha-2 codes in capitals (ZZ: numbers without a country); not ${bad.join(", ")}`;
    else if (countries.length > 300)
      errors["spend_controls.allowed_countries"] = "allowedCountries holds at most 300 codes";
  }
  for (const [field, path, value] of [
    ["maxPricePerMessage", "max_price_per_message_micros", change.maxPricePerMessageMicros],
    ["dailySpendLimit", "daily_spend_limit_micros", change.dailySpendLimitMicros],
  ] as const) {
    if (value === null || value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 0 || value > MAX_MICROS)
      errors[`spend_controls.${path}`] =
        `${field} must be a number from 0 to ${MAX_MICROS / 1e6}, in credit units`;
  }
  return errors;
}

/** Applies a checked change; the account after it, or null when there is no such account. */
export async function updateSpendControls(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  change: SpendControlsChange,
): Promise<AccountDoc | null> {
  const set: Record<string, unknown> = {};
  const unset: Record<string, ""> = {};
  const fields: [keyof SpendControlsDoc, unknown][] = [
    ["allowedCountries", change.allowedCountries],
    ["maxPricePerMessageMicros", change.maxPricePerMessageMicros],
    ["dailySpendLimitMicros", change.dailySpendLimitMicros],
  ];
  for (const [name, value] of fields) {
    if (value === undefined) continue;
    const empty = value === null || (Array.isArray(value) && value.length === 0);
    if (empty) unset[`spendControls.${name}`] = "";
    else set[`spendControls.${name}`] = Array.isArray(value) ? [...new Set(value)] : value;
  }
  const update: Record<string, unknown> = {};
  if (Object.keys(set).length > 0) update.$set = set;
  if (Object.keys(unset).length > 0) update.$unset = unset;
  if (Object.keys(update).length === 0) return accounts.findOne({ _id: apiKey });
  return accounts.findOneAndUpdate({ _id: apiKey }, update, { returnDocument: "after" });
}
