/**
 * Splitting a text into SMS parts (docs/sms-api.md "Splitting", docs/design.md "Counting" and "Longest text").
 *
 * - Every code point <= U+00FF (ISO-Latin-1): one message up to 160 characters, else parts of at most 153.
 * - Otherwise: one message up to 70 UTF-16 code units, else parts of at most 67 code units; a part that
 *   would end between the two halves of a surrogate pair ends one unit earlier (the pair moves on).
 * - Parts are consecutive slices; their concatenation is exactly the text.
 * - Empty text is not a message: callers reject it first (`errors.text`, "cannot be empty");
 *   here it has 0 parts and `segmentText`/`validateText` answer `{ ok: false, error: "empty" }`.
 *
 * Grapheme clusters (ZWJ emoji, combining marks) are deliberately not kept together: the contract
 * counts code units, Intl.Segmenter results change with Unicode versions, and the handset recomposes the parts anyway.
 *
 * Note: a code point <= U+00FF is always a single UTF-16 unit <= 0xFF (surrogates are >= 0xD800), so the
 * Latin-1 test is a scan of char codes, and for Latin-1 text length in units == length in characters.
 */
import { DEFAULT_MAX_PARTS } from "./limits.ts";

export type Encoding = "latin1" | "unicode";

export const SINGLE_PART_MAX: Readonly<Record<Encoding, number>> = { latin1: 160, unicode: 70 };
export const MULTI_PART_MAX: Readonly<Record<Encoding, number>> = { latin1: 153, unicode: 67 };

export type TextError = "empty" | "too_many_parts";

export type TextCheck =
  | { ok: true; encoding: Encoding; partCount: number }
  | { ok: false; error: TextError; encoding: Encoding; partCount: number; maxParts: number };

export type SegmentResult =
  | { ok: true; encoding: Encoding; parts: string[] }
  | { ok: false; error: TextError; encoding: Encoding; partCount: number; maxParts: number };

/** "latin1" when every code point is <= U+00FF (the empty text included), else "unicode". Stops at the first wider unit. */
export function textEncoding(text: string): Encoding {
  const len = text.length;
  for (let i = 0; i < len; i++) {
    if (text.charCodeAt(i) > 0xff) return "unicode";
  }
  return "latin1";
}

/** End (exclusive) of the unicode part starting at `start`, given that a split is needed. */
function unicodePartEnd(text: string, start: number): number {
  const end = start + 67;
  if (end >= text.length) return text.length;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) {
    const next = text.charCodeAt(end);
    // Only a real pair is kept together; a lone high surrogate is a unit like any other.
    if (next >= 0xdc00 && next <= 0xdfff) return end - 1;
  }
  return end;
}

function countForEncoding(text: string, encoding: Encoding): number {
  const len = text.length;
  if (len === 0) return 0;
  if (len <= SINGLE_PART_MAX[encoding]) return 1;
  if (encoding === "latin1") return Math.ceil(len / 153);
  // Each part loses at most one unit to a surrogate pair: only boundaries are inspected, O(parts).
  let count = 0;
  for (let pos = 0; pos < len; pos = unicodePartEnd(text, pos)) count++;
  return count;
}

/**
 * Number of parts the text is sent as, without allocating any string: one scan of char codes
 * (stopping at the first unit > 0xFF) plus one look at each part boundary. 0 for "".
 */
export function countParts(text: string): number {
  return countForEncoding(text, textEncoding(text));
}

/** Encoding and part count in one pass; the same figures `segmentText` would give. */
export function measureText(text: string): { encoding: Encoding; partCount: number } {
  const encoding = textEncoding(text);
  return { encoding, partCount: countForEncoding(text, encoding) };
}

/** Fast check for the hot path (batch validation): empty, or more than `maxParts` parts, is an error. */
export function validateText(text: string, maxParts: number = DEFAULT_MAX_PARTS): TextCheck {
  const encoding = textEncoding(text);
  const partCount = countForEncoding(text, encoding);
  if (partCount === 0) return { ok: false, error: "empty", encoding, partCount, maxParts };
  if (partCount > maxParts) {
    return { ok: false, error: "too_many_parts", encoding, partCount, maxParts };
  }
  return { ok: true, encoding, partCount };
}

/** The parts of a text, whatever their number. "" gives no parts. A single-part text is `[text]`. */
export function splitText(text: string): { encoding: Encoding; parts: string[] } {
  const encoding = textEncoding(text);
  const len = text.length;
  if (len === 0) return { encoding, parts: [] };
  if (len <= SINGLE_PART_MAX[encoding]) return { encoding, parts: [text] };
  const parts: string[] = [];
  if (encoding === "latin1") {
    for (let pos = 0; pos < len; pos += 153) parts.push(text.slice(pos, pos + 153));
  } else {
    for (let pos = 0; pos < len; ) {
      const end = unicodePartEnd(text, pos);
      parts.push(text.slice(pos, end));
      pos = end;
    }
  }
  return { encoding, parts };
}

/**
 * Splits a text for sending, enforcing the longest text (`maxParts`, default 10).
 * Counts first, so an over-long text allocates nothing.
 */
export function segmentText(text: string, maxParts: number = DEFAULT_MAX_PARTS): SegmentResult {
  const check = validateText(text, maxParts);
  if (!check.ok) return check;
  return { ok: true, ...splitText(text) };
}

/** Human text for `errors.text` when `validateText`/`segmentText` fails. */
export function textErrorMessage(error: TextError, maxParts: number = DEFAULT_MAX_PARTS): string {
  return error === "empty"
    ? "text cannot be empty"
    : `text is too long: more than ${maxParts} parts (a part holds 153 ISO-Latin-1 characters, or 67 UTF-16 code units of other text)`;
}
