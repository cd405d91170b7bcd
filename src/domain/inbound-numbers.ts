/**
 * The form of an inbound number (docs/design.md "Two-way messaging": "Numbers"): an E.164 long code
 * written with its `+` (8 to 15 digits, the first not 0), or a short code of 3 to 8 digits. One
 * written form per number, so that an MO's destination and an assignment meet on the same key.
 */
export const INBOUND_NUMBER_PATTERN = /^(\+[1-9][0-9]{7,14}|[0-9]{3,8})$/;

export const INBOUND_NUMBER_ERROR =
  "number must be an E.164 number with its + (8 to 15 digits, not starting with 0) or a short code of 3 to 8 digits";

export function isInboundNumber(number: string): boolean {
  return INBOUND_NUMBER_PATTERN.test(number);
}
