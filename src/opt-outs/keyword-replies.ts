/**
 * The automatic replies to the opt-out words (docs/design.md "Two-way messaging": "Replies"). Pure.
 *
 * The defaults name the account and the other words, as CTIA asks of STOP and HELP answers, and
 * carry no marketing (the FCC's one confirmation). Accounts may write their own, at most
 * KEYWORD_REPLY_MAX_PARTS parts long: a reply is free, so it is kept short.
 */
import type { OptOutType } from "../domain/opt-out-type.ts";
import { segmentText } from "../domain/segments.ts";
import { optOutTypeOf } from "./keywords.ts";

export const KEYWORD_REPLY_MAX_PARTS = 2;

/** One reply per (account, number, word) within this window at most. */
export const KEYWORD_REPLY_WINDOW_MS = 5 * 60_000;

/** Of the account's name, the defaults show this many characters at most, so they fit in 2 parts. */
const NAME_MAX_CHARS = 30;

export function defaultKeywordReply(type: OptOutType, accountName: string): string {
  const name = Array.from(accountName.trim()).slice(0, NAME_MAX_CHARS).join("");
  switch (type) {
    case "STOP":
      return `${name}: you will get no more messages from us. Reply START to get them again.`;
    case "START":
      return `${name}: you will get our messages again. Reply STOP to stop them, HELP for help.`;
    case "HELP":
      return `${name}: reply STOP to get no more messages, START to get them again.`;
  }
}

/** The reply in force: the account's own text, else the default. */
export function keywordReply(
  type: OptOutType,
  accountName: string,
  own: Partial<Record<OptOutType, string>> | undefined,
): string {
  return own?.[type] || defaultKeywordReply(type, accountName);
}

/**
 * What is wrong with an account's own reply text, if anything. Empty restores the default. A
 * reply that is itself an opt-out word would read as one if the handset echoed it back.
 */
export function keywordReplyError(field: string, text: string): string | undefined {
  if (text === "") return undefined;
  if (!segmentText(text, KEYWORD_REPLY_MAX_PARTS).ok) {
    return `${field} must be at most ${KEYWORD_REPLY_MAX_PARTS} parts (306 Latin-1 characters, or 134 UTF-16 units of other text)`;
  }
  if (text.trim() === "") return `${field} cannot be blank`;
  if (optOutTypeOf(text) !== undefined) return `${field} must not be an opt-out word itself`;
  return undefined;
}
