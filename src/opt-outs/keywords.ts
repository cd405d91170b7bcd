/**
 * Opt-out words of an inbound message (docs/design.md "Two-way messaging": "Opt-out words"). Pure.
 *
 * The whole text counts, trimmed of spaces and punctuation at both ends and compared without case:
 * "stop." and " Stop! " are STOP, "STOP PLEASE" is no keyword (delivered with no optOutType), so a
 * person's sentence is never mistaken for a keyword. Inner spaces, hyphens and dots matter only in
 * the two-word forms the lists name ("OPT OUT", "OPT-OUT").
 */

import type { OptOutType } from "../domain/opt-out-type.ts";

const KEYWORDS: Record<OptOutType, readonly string[]> = {
  STOP: [
    "STOP",
    "STOPALL",
    "UNSUBSCRIBE",
    "CANCEL",
    "END",
    "QUIT",
    "REVOKE",
    "OPTOUT",
    "OPT OUT",
    "OPT-OUT",
    "ARRET",
  ],
  START: ["START", "YES", "UNSTOP"],
  HELP: ["HELP", "INFO"],
};

const TYPE_OF_WORD = new Map<string, OptOutType>(
  (Object.keys(KEYWORDS) as OptOutType[]).flatMap((type) =>
    KEYWORDS[type].map((word) => [word, type] as const),
  ),
);

/** Longest text worth looking at: the longest keyword with room for spaces and punctuation around it. */
const MAX_KEYWORD_TEXT = 64;

// Letters and digits (any script) are kept; everything else at either end is trimmed.
const EDGE = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu;

/** The keyword type of an inbound text, or undefined when it is not exactly one of the keywords. */
export function optOutTypeOf(text: string): OptOutType | undefined {
  if (text.length > MAX_KEYWORD_TEXT) return undefined;
  // "ARRÊT" is written with or without its accent; compare without accents.
  const word = text
    .replace(EDGE, "")
    .normalize("NFD")
    .replace(/\p{M}/gu, "")
    .toUpperCase()
    .replace(/\s+/gu, " ");
  return TYPE_OF_WORD.get(word);
}

/** The words of each type, for replies and documentation. */
export function keywordsOf(type: OptOutType): readonly string[] {
  return KEYWORDS[type];
}
