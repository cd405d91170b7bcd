/**
 * The automatic reply to a STOP, START or HELP (docs/design.md "Two-way messaging": "Replies"): one per
 * (account, number, word) per 5 minutes, from the number the word was sent to, not charged.
 *
 * Crash-safe: the reply's slot records the reply (src/opt-outs/reply-slots.ts) and the reply message
 * is stored under the id recorded there, so the hook's second run for a redelivered inbound
 * message stores a reply a crash kept from being stored, and never a second one.
 */
import type { OptOutType } from "../domain/opt-out-type.ts";
import { segmentText } from "../domain/segments.ts";
import type { Store } from "../store/database.ts";
import { acceptedMessage } from "../store/messages.ts";
import type { IdAllocator } from "../store/sequences.ts";
import {
  KEYWORD_REPLY_MAX_PARTS,
  KEYWORD_REPLY_WINDOW_MS,
  keywordReply,
} from "./keyword-replies.ts";
import { canonicalNumber, type OptOutStore } from "./list.ts";
import { isDuplicate, type TakenSlot, takeReplySlot } from "./reply-slots.ts";

/** What a reply needs of the inbound message it answers. */
export interface KeywordMessage {
  _id: number;
  accountId: string;
  /** The handset: the reply goes to it. */
  from: string;
  /** The account's number: the reply comes from it. */
  to: string;
}

export interface KeywordReplyDeps {
  store: Store;
  optOuts: OptOutStore;
  messageIds: IdAllocator;
  /** Schedules the reply's delivery. */
  onQueued: (accountId: string, deliveryAt: Date, acceptedAt: Date) => Promise<void> | void;
}

/** A reply's validity: a confirmation hours late is worse than none. */
const REPLY_TTL_SECONDS = 3600;

/** Stores the reply to `message`'s word unless its slot was taken for another message. */
export async function replyToKeyword(
  deps: KeywordReplyDeps,
  message: KeywordMessage,
  type: OptOutType,
): Promise<void> {
  const { store } = deps;
  const account = await store.accounts.findOne(
    { _id: message.accountId },
    { projection: { name: 1, keywordReplies: 1 } },
  );
  if (!account) return;
  const text = keywordReply(type, account.name, account.keywordReplies);
  // Own texts are checked when set, and the defaults fit (opt-outs/keyword-replies.ts).
  const segmented = segmentText(text, KEYWORD_REPLY_MAX_PARTS);
  if (!segmented.ok) return;
  const count = segmented.parts.length;
  // Taken before the slot: ids of a reply not sent are a gap in the sequence, nothing more.
  const messageId = await deps.messageIds.take(count > 1 ? count + 1 : 1);
  const slot = {
    accountId: message.accountId,
    number: canonicalNumber(message.from),
    keyword: type,
  };
  const taken = await takeReplySlot(
    deps.optOuts.replies,
    slot,
    { inboundId: message._id, messageId, text },
    store.clock.now(),
    KEYWORD_REPLY_WINDOW_MS,
  );
  if (!taken) return;
  const doc = replyMessage(message, type, taken);
  if (!doc) return;
  try {
    await store.messages.insertOne(doc);
  } catch (error) {
    // Stored by an earlier run for this inbound message, cut short after the insert.
    if (!isDuplicate(error)) throw error;
  }
  await deps.onQueued(message.accountId, doc.deliveryAt ?? taken.sentAt, taken.sentAt);
}

/** The reply message recorded with the slot: the same document on every run. */
function replyMessage(message: KeywordMessage, type: OptOutType, taken: TakenSlot) {
  const { messageId: id, text } = taken.reply;
  const segmented = segmentText(text, KEYWORD_REPLY_MAX_PARTS);
  if (!segmented.ok) return undefined;
  const parts = segmented.parts;
  const doc = acceptedMessage(
    {
      id,
      accountId: message.accountId,
      to: message.from,
      from: message.to,
      text: parts.join(""),
      parts: parts.length,
      ttl: REPLY_TTL_SECONDS,
      deliveryClass: "single",
      ...(parts.length > 1 && { segments: parts.map((t, i) => ({ id: id + 1 + i, text: t })) }),
    },
    taken.sentAt,
  );
  doc.keywordReply = type;
  return doc;
}
