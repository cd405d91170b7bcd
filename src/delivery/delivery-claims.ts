/**
 * Claims of due delivery steps (submission, expiry), one account lane at a time: see
 * scheduling/claims.ts for the mechanics, scheduling/lanes.ts for the turns and
 * src/domain/delivery-priority.ts for the order within an account.
 */
import type { Collection } from "mongodb";
import { deliveryRank } from "../domain/delivery-priority.ts";
import { type ClaimOptions, claimDue, type WorkQueue } from "../scheduling/claims.ts";
import type { MessageDoc } from "../store/documents.ts";

/**
 * Crash safety: the claim's own update counts a submission attempt (`submitAttempts`) before the
 * carrier is called; a claimed message given back unsubmitted has it taken back. Claims are cut
 * to the carrier's window, so after a crash at most the window's parts carry an attempt that may
 * or may not have reached the carrier.
 */
export const DELIVERY_QUEUE: WorkQueue = {
  due: "deliveryAt",
  lease: "deliveryLease",
  counter: "submitAttempts",
};

export type ClaimedMessage = Pick<
  MessageDoc,
  | "_id"
  | "accountId"
  | "to"
  | "from"
  | "text"
  | "segments"
  | "parts"
  | "pricePerPartMicros"
  | "status"
  | "createdAt"
  | "sendAt"
  | "expiresAt"
  | "deliveryAt"
  | "deliveryClass"
  | "carrierIds"
  | "submitAttempts"
  | "traceContext"
  | "route"
  | "carrier"
  | "keywordReply"
>;

/**
 * A claimed message's own place in its account's queue, where it goes back when given back unsent:
 * ranked from when it became due (its sendAt when scheduled, which has passed once it was claimed).
 */
export function placeInQueue(
  message: Pick<ClaimedMessage, "createdAt" | "sendAt" | "deliveryClass">,
): Date {
  return deliveryRank(message.sendAt ?? message.createdAt, message.deliveryClass ?? "single");
}

/** Claims up to `limit` messages due for a delivery step, earliest `deliveryAt` first. */
export async function claimDueDeliveries(
  messages: Collection<MessageDoc>,
  options: ClaimOptions,
): Promise<ClaimedMessage[]> {
  const claimed = await claimDue<ClaimedMessage & { batchId?: number }>(
    messages,
    DELIVERY_QUEUE,
    CLAIMED_FIELDS,
    options,
  );
  return claimed.map(({ batchId: _batch, ...doc }) => doc);
}

const CLAIMED_FIELDS = {
  _id: 1,
  accountId: 1,
  to: 1,
  from: 1,
  text: 1,
  segments: 1,
  parts: 1,
  // Its refund if it is withdrawn before submission (its recipient opted out).
  pricePerPartMicros: 1,
  status: 1,
  createdAt: 1,
  sendAt: 1,
  expiresAt: 1,
  deliveryAt: 1,
  deliveryClass: 1,
  carrierIds: 1,
  submitAttempts: 1,
  traceContext: 1,
  // With several carriers: where it goes if its carrier fails (submission.ts), where it came
  // from, and the carrier it is kept for once that one accepted a part of it.
  route: 1,
  carrier: 1,
  // A reply to STOP goes to a number that just opted out: the last check lets it through.
  keywordReply: 1,
} as const;
