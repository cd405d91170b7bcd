/**
 * The slots of the automatic replies to STOP, START and HELP (docs/design.md "Two-way messaging":
 * "Replies"): at most one reply per (account, number, keyword) per 5 minutes, in `optOutReplies`
 * (opened with the opt-out lists, src/opt-outs/list.ts).
 *
 * A slot is taken before its reply message is stored, and the two are separate writes (the test
 * database has no transactions). So the slot records the reply it was taken for: the inbound
 * message that asked, the reply message's id and its text. A crash between the two writes leaves
 * the inbound message unanswered to the carrier, which delivers it again; that redelivery finds
 * the slot taken for the same inbound message and stores the same reply under the same id (a
 * no-op when the first try got that far). Another inbound message within the window finds the
 * slot taken for someone else and is not answered.
 */

import type { Collection, MongoServerError } from "mongodb";
import type { OptOutType } from "../domain/opt-out-type.ts";

/** The reply a slot was taken for. */
export interface PendingReply {
  /** The inbound message (the keyword) it answers. */
  inboundId: number;
  /** The reply message's id, from the message sequence. */
  messageId: number;
  /** Its text as it was when the slot was taken (the account may edit it meanwhile). */
  text: string;
}

export interface ReplySlotDoc {
  _id: { accountId: string; number: string; keyword: OptOutType };
  sentAt: Date;
  /** Absent on slots taken before replies were recorded with them. */
  reply?: PendingReply;
}

/** A slot this reply may be stored for, and when it was taken (the reply's acceptance time). */
export interface TakenSlot {
  sentAt: Date;
  reply: PendingReply;
}

/** A duplicate key error (11000). */
export const isDuplicate = (error: unknown) => (error as MongoServerError)?.code === 11000;

/**
 * Takes the slot of (account, number, word) for `reply` unless it was taken within `windowMs` of
 * `now`, however many instances answer at once. Answers what to store: `reply` when the slot was
 * free; the reply recorded with it when it was taken for the same inbound message (a redelivery:
 * finish what a crash cut short); nothing when another took it within the window.
 */
export async function takeReplySlot(
  slots: Collection<ReplySlotDoc>,
  slot: ReplySlotDoc["_id"],
  reply: PendingReply,
  now: Date,
  windowMs: number,
): Promise<TakenSlot | undefined> {
  try {
    // A slot once taken for this inbound message stays its own, however late the redelivery.
    await slots.updateOne(
      {
        _id: slot,
        sentAt: { $lte: new Date(now.getTime() - windowMs) },
        "reply.inboundId": { $ne: reply.inboundId },
      },
      { $set: { sentAt: now, reply } },
      { upsert: true },
    );
    return { sentAt: now, reply };
  } catch (error) {
    // The slot exists and was taken within the window: the upsert's insert collides.
    if (!isDuplicate(error)) throw error;
  }
  const taken = await slots.findOne({ _id: slot, "reply.inboundId": reply.inboundId });
  return taken?.reply && { sentAt: taken.sentAt, reply: taken.reply };
}
