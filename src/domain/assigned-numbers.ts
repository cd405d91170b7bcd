/**
 * The numbers the operator assigns to accounts (docs/design.md "Two-way messaging": "Numbers"): long codes
 * kept as E.164 (`+` and 8 to 15 digits, the first not 0), short codes as 3 to 8 digits. Pure.
 */

export const ASSIGNED_NUMBER_ERROR =
  "number must be a long code (+ and 8 to 15 digits, the first not 0) or a short code of 3 to 8 digits";

/**
 * The form a number is kept in, or undefined when it is neither kind. Up to 8 digits without `+`
 * is a short code; 9 to 15 digits without `+` can only be a long code, kept with its `+`.
 */
export function assignedNumberForm(input: string): string | undefined {
  if (/^\+[1-9]\d{7,14}$/.test(input)) return input;
  if (/^\d{3,8}$/.test(input)) return input;
  if (/^[1-9]\d{8,14}$/.test(input)) return `+${input}`;
  return undefined;
}

/** Whether `sender` names one of `numbers` (kept forms), written with or without the `+`. */
export function isOwnNumber(sender: string, numbers: ReadonlySet<string>): boolean {
  return numbers.has(sender) || (!sender.startsWith("+") && numbers.has(`+${sender}`));
}
