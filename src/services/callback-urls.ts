import { exceedsChars, tooLong, URL_MAX_CHARS } from "../domain/limits.ts";
import { checkStatusCallback } from "./message-intake.ts";

/**
 * A status URL as a parameter named `field` (statusCallback on sends, statusUrl on accounts): at
 * most URL_MAX_CHARS, checked before it is parsed, then an absolute http(s) URL. Undefined when
 * it is fine.
 */
export function checkCallbackUrl(field: string, url: string): string | undefined {
  if (exceedsChars(url, URL_MAX_CHARS)) return tooLong(field, URL_MAX_CHARS);
  return checkStatusCallback(url)?.replace("statusCallback", field);
}
