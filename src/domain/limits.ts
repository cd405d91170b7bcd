/**
 * Limits of the public contract (docs/sms-api.md "Limits" + docs/design.md "Decisions"), and small validators.
 * Pure: no I/O.
 */

/** ttl of a message, in seconds: 1 to 21600 (6 hours), default 21600. */
export const TTL_MIN_SECONDS = 1;
export const TTL_MAX_SECONDS = 21_600;
export const TTL_DEFAULT_SECONDS = 21_600;

/** At most 10000 messages in one POST /sms-batch (and in a batch information's `messages`). */
export const BATCH_MAX_MESSAGES = 10_000;

/** Batch name: at most 20 characters, counted in Unicode code points (an emoji counts as 1). */
export const BATCH_NAME_MAX_CHARS = 20;

/** Sender name: 1 to 11 characters, ASCII letters and digits only. */
export const SENDER_NAME_MAX_CHARS = 11;
export const SENDER_NAME_PATTERN = /^[A-Za-z0-9]{1,11}$/;

/** Longest text: at most this many parts per message (configurable by the caller; this is the default). */
export const DEFAULT_MAX_PARTS = 10;

export type TtlResult = { ok: true; ttl: number } | { ok: false; error: string };

export const TTL_ERROR = `ttl must be an integer from ${TTL_MIN_SECONDS} to ${TTL_MAX_SECONDS} seconds`;

/**
 * Validates an optional ttl as received from JSON (number) or a form (decimal string).
 * Absent (`undefined`, `null` or `""`) gives the default 21600. A number must be an integer
 * in range; a string must be plain decimal digits (no sign, no fraction, no spaces) in range.
 */
export function validateTtl(value: unknown): TtlResult {
  if (value === undefined || value === null || value === "") {
    return { ok: true, ttl: TTL_DEFAULT_SECONDS };
  }
  let n: number;
  if (typeof value === "number") {
    n = value;
  } else if (typeof value === "bigint") {
    n = Number(value);
  } else if (typeof value === "string" && /^[0-9]{1,10}$/.test(value)) {
    n = Number(value);
  } else {
    return { ok: false, error: TTL_ERROR };
  }
  if (!Number.isInteger(n) || n < TTL_MIN_SECONDS || n > TTL_MAX_SECONDS) {
    return { ok: false, error: TTL_ERROR };
  }
  return { ok: true, ttl: n };
}

/** ASCII letters and digits only, 1 to 11 of them. */
export function isValidSenderName(name: string): boolean {
  return SENDER_NAME_PATTERN.test(name);
}

/**
 * At most 20 code points. The name is optional, so "" is within the limit; whether an empty
 * name means "no name" is the caller's decision.
 */
export function isValidBatchName(name: string): boolean {
  // Fast exits: fewer units than the limit means fewer code points; more than twice means more.
  if (name.length <= BATCH_NAME_MAX_CHARS) return true;
  if (name.length > 2 * BATCH_NAME_MAX_CHARS) return false;
  return countCodePoints(name) <= BATCH_NAME_MAX_CHARS;
}

/** Number of Unicode code points; a lone surrogate counts as one. */
export function countCodePoints(s: string): number {
  let count = 0;
  const len = s.length;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < len) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

// Input limits beyond the spec's: every free-text field and every collection an account can grow
// is bounded, so no request can make the service store, copy or parse without end.

/** Every URL we accept (statusCallback, an account's status URL): the de-facto web limit. */
export const URL_MAX_CHARS = 2048;

/** Sender name request: `owner` (a company, a person or a website) and `exampleMsg`. */
export const SENDER_OWNER_MAX_CHARS = 256;
/** Ten parts of Latin-1 text, the longest message the service sends by default. */
export const SENDER_EXAMPLE_MAX_CHARS = 1530;

/** Sender names one account may hold, pending and approved together. */
export const SENDER_NAMES_PER_ACCOUNT_MAX = 100;

/** Form pairs in one body: the largest form takes 7 parameters. */
export const FORM_MAX_PARAMETERS = 100;

/** Connect/gRPC messages other than SendBatch, read before authentication at most. */
export const RPC_READ_MAX_BYTES = 1024 * 1024;

/** Longer than `max` code points, as JSON Schema's maxLength counts (the REST schemas' check). */
export function exceedsChars(s: string, max: number): boolean {
  if (s.length <= max) return false;
  return s.length > 2 * max || countCodePoints(s) > max;
}

/** The limit's message, the same on REST and RPC. */
export const tooLong = (field: string, max: number) => `${field} must be at most ${max} characters`;
