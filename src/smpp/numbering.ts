/**
 * Which assigned numbers an MO's destination may be, by its TON (docs/design.md "Carrier-grade
 * SMPP": "Addresses keep their type"). Pure. Assigned numbers are E.164 (`+` and digits) or short
 * codes (3 to 8 digits).
 *
 * - TON 1 (international): E.164 only; it never matches a short code of the same digits.
 * - TON 3 (network specific) and 6 (abbreviated): a short code only.
 * - TON 0 (unknown) and 2 (national): the national number in the carrier's country (its
 *   national prefix dropped) when the carrier has one, then a short code; TON 0 last as E.164,
 *   since carriers often write international digits with TON 0.
 * - Any TON: `+` (or `00`) before the digits makes the number E.164.
 * - No TON (an MO from the simulator): as written, then with `+`.
 */

/** The carrier's country: its calling code and national (trunk) prefix, e.g. 49 and 0. */
export interface NationalNumbering {
  country: string;
  callingCode: string;
  nationalPrefix: string;
}

export const TON_UNKNOWN = 0;
export const TON_INTERNATIONAL = 1;
export const TON_NATIONAL = 2;
export const TON_NETWORK_SPECIFIC = 3;
export const TON_ABBREVIATED = 6;

const SHORT_CODE = /^\d{3,8}$/;
const E164_DIGITS = /^[1-9]\d{6,14}$/;

export function destinationCandidates(
  to: string,
  ton?: number,
  national?: NationalNumbering,
): string[] {
  const written = to.trim();
  if (ton === undefined) return legacyCandidates(written);
  if (written.startsWith("+")) return [written];
  if (/^00\d+$/.test(written)) return [`+${written.slice(2)}`];
  if (!/^\d+$/.test(written)) return [written];
  switch (ton) {
    case TON_INTERNATIONAL:
      return [`+${written}`];
    case TON_NETWORK_SPECIFIC:
    case TON_ABBREVIATED:
      return [written];
    case TON_UNKNOWN:
    case TON_NATIONAL: {
      const candidates: string[] = [];
      if (national) {
        const prefix = national.nationalPrefix;
        const rest = prefix && written.startsWith(prefix) ? written.slice(prefix.length) : written;
        const e164 = `${national.callingCode}${rest}`;
        if (E164_DIGITS.test(e164)) candidates.push(`+${e164}`);
      }
      if (SHORT_CODE.test(written)) candidates.push(written);
      if (ton === TON_UNKNOWN && E164_DIGITS.test(written)) candidates.push(`+${written}`);
      return [...new Set(candidates)];
    }
    default:
      return [written];
  }
}

/** Before TONs were kept (and for the simulator): as written, and with or without `+`. */
function legacyCandidates(trimmed: string): string[] {
  if (trimmed.startsWith("+")) return [trimmed, trimmed.slice(1)];
  if (trimmed.startsWith("00") && /^\d+$/.test(trimmed)) return [`+${trimmed.slice(2)}`, trimmed];
  if (/^\d+$/.test(trimmed)) return [trimmed, `+${trimmed}`];
  return [trimmed];
}
