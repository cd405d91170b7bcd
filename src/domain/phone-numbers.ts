/**
 * `to` format (docs/design.md "Decisions"): optional `+`, then 8 to 15 ASCII digits, the first not 0.
 * No spaces, dashes or brackets. The number is stored and echoed exactly as submitted.
 */
export const PHONE_NUMBER_PATTERN = /^\+?[1-9][0-9]{7,14}$/;

export const PHONE_NUMBER_ERROR =
  "to must be a phone number: optional +, then 8 to 15 digits (country code and number), not starting with 0";

export function isValidPhoneNumber(s: string): boolean {
  return PHONE_NUMBER_PATTERN.test(s);
}
