/**
 * The rules of a message's client reference and of a scheduled send's time (docs/design.md
 * "Message reads, client references, scheduled sends and cancel"), free of I/O.
 */

/** A clientRef is 1 to 128 characters (code points). */
export const CLIENT_REF_MAX_CHARS = 128;
/** sendAt at most this far ahead: 180 days. */
export const SEND_AT_MAX_AHEAD_MS = 180 * 24 * 3600_000;
/** sendAt up to this far in the past counts as now (clocks and queues differ a little). */
export const SEND_AT_PAST_GRACE_MS = 60_000;

export const CLIENT_REF_ERROR = `clientRef must be 1 to ${CLIENT_REF_MAX_CHARS} characters without control characters`;

/** The error of a clientRef, or undefined when it is valid. */
export function clientRefError(ref: string): string | undefined {
  const length = [...ref].length;
  if (length < 1 || length > CLIENT_REF_MAX_CHARS) return CLIENT_REF_ERROR;
  // C0, DEL and C1 controls, and the Unicode line and paragraph separators.
  for (const ch of ref) {
    const c = ch.codePointAt(0) ?? 0;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029) {
      return CLIENT_REF_ERROR;
    }
  }
  return undefined;
}

export type SendAtCheck = { ok: true; sendAt: Date | undefined } | { ok: false; error: string };

/**
 * When a message asked to go at `at` goes, seen at `now`: undefined (now) when `at` is at most
 * 60 s past; an error when further past or more than 180 days ahead.
 */
export function checkSendAt(at: Date, now: Date): SendAtCheck {
  const ms = at.getTime();
  if (Number.isNaN(ms)) return { ok: false, error: "sendAt must be an RFC 3339 time with offset" };
  const ahead = ms - now.getTime();
  if (ahead < -SEND_AT_PAST_GRACE_MS) {
    return { ok: false, error: "sendAt is in the past (more than 60 seconds ago)" };
  }
  if (ahead > SEND_AT_MAX_AHEAD_MS) {
    return { ok: false, error: "sendAt must be at most 180 days ahead" };
  }
  return { ok: true, sendAt: ahead > 0 ? at : undefined };
}
