/**
 * The delivery queue's writes: recording a chunk's submissions, expiring messages whose validity
 * ran out, and giving claimed messages back. Claiming is in delivery-claims.ts; each status
 * change is one atomic update of the store (src/store/status-changes.ts).
 *
 * Due work is found through `deliveryAt` (indexed): an ACCEPTED message is due for submission at
 * `deliveryAt`, a SENT one is due for expiry at its `expiresAt`, a final one has no `deliveryAt`.
 * A claim pushes `deliveryAt` forward by the lease and records the owner in `deliveryLease`, so a
 * crashed instance's claims simply become due again when the lease runs out.
 */
import type { AnyBulkWriteOperation, Collection, UpdateFilter } from "mongodb";
import type { DeliveryClass } from "../domain/delivery-priority.ts";
import type { MessageDoc } from "../store/documents.ts";
import {
  changeStatus,
  changeStatusEach,
  type MessageStatusChange,
} from "../store/status-changes.ts";

export interface SubmissionOutcome {
  id: number;
  /** Carrier ids of the parts the carrier accepted. */
  carrierIds: string[];
  deliveryClass?: DeliveryClass;
  /** Set when a part was refused: the message is SEND_ERROR. */
  error?: string;
  expiresAt: Date;
}

/**
 * Records a chunk's submissions in one bulkWrite, one atomic update per message filtered on
 * ACCEPTED: SENT with the parts' carrier ids (and due again at `expiresAt` for the no-receipt
 * expiry), or SEND_ERROR with the carrier's refusal (and the ids of the parts it did accept, so
 * their receipts are recognised and dropped).
 */
export async function recordSubmissions(
  messages: Collection<MessageDoc>,
  outcomes: readonly SubmissionOutcome[],
  now: Date,
  /** The carrier's name, kept beside its ids when the plan has several (receipts match on both). */
  carrier?: string,
): Promise<{ sent: number; sendErrors: number }> {
  if (outcomes.length === 0) return { sent: 0, sendErrors: 0 };
  const sent: MessageStatusChange[] = [];
  const failed: MessageStatusChange[] = [];
  for (const o of outcomes) {
    if (o.error === undefined) {
      sent.push({
        id: o.id,
        ...(o.deliveryClass && { deliveryClass: o.deliveryClass }),
        from: ["ACCEPTED"],
        change: {
          status: "SENT",
          set: {
            carrierIds: o.carrierIds,
            deliveryAt: o.expiresAt,
            ...(carrier !== undefined && { carrier }),
          },
          unset: ["deliveryLease"],
        },
      });
    } else {
      // Its unsent parts are refunded by money/refunds.ts: the mark lands with the status.
      const set: Partial<MessageDoc> = { sendError: o.error, refundDue: true };
      if (o.carrierIds.length > 0) set.carrierIds = o.carrierIds;
      if (carrier !== undefined) set.carrier = carrier;
      failed.push({
        id: o.id,
        ...(o.deliveryClass && { deliveryClass: o.deliveryClass }),
        from: ["ACCEPTED"],
        change: { status: "SEND_ERROR", set, unset: ["deliveryAt", "deliveryLease"] },
      });
    }
  }
  return {
    sent: sent.length > 0 ? await changeStatusEach(messages, sent, now) : 0,
    sendErrors: failed.length > 0 ? await changeStatusEach(messages, failed, now) : 0,
  };
}

/**
 * DELIVERY_ERROR / Expired for those of `ids` that are still ACCEPTED or SENT and whose ttl ran
 * out. Those still ACCEPTED are marked `refundDue` in the same update: no carrier took them, so
 * money/refunds.ts gives their charge back (docs/design.md "Money"). Returns the number changed.
 */
export async function expireMessages(
  messages: Collection<MessageDoc>,
  ids: readonly number[],
  now: Date,
  classes?: ReadonlyMap<number, DeliveryClass>,
): Promise<number> {
  if (ids.length === 0) return 0;
  const expire = (from: "ACCEPTED" | "SENT") =>
    changeStatus(
      messages,
      ids,
      [from],
      {
        status: "DELIVERY_ERROR",
        reason: "Expired",
        unset: ["deliveryAt", "deliveryLease"],
        ...(from === "ACCEPTED" && { set: { refundDue: true } }),
      },
      now,
      {
        filter: { expiresAt: { $lte: now } },
        stillDue: (doc) => doc.expiresAt.getTime() <= now.getTime(),
        ...(classes && { classes }),
      },
    );
  // ACCEPTED first: a message SENT meanwhile is then expired by the second, without the mark.
  return (await expire("ACCEPTED")) + (await expire("SENT"));
}

/** A claimed message that needs nothing now goes back: due again at `dueAt`, or off the queue if undefined. */
export interface Release {
  id: number;
  dueAt?: Date;
  /** Given back without being submitted: its claim's attempt is taken back. */
  unattempted?: boolean;
  /** This carrier accepted some of its parts: the rest go to it alone (MessageDoc.carrier). */
  pinTo?: string;
  /** This carrier refused it for a fault of its own: it goes to the next one of its route. */
  leave?: string;
}

/**
 * Gives claimed messages back, by `_id` (one bulkWrite). Unconditional: the claim still holds,
 * and a release racing with a final status change at worst leaves a `deliveryAt` on a final
 * message, which the next claim removes.
 */
export async function releaseDeliveries(
  messages: Collection<MessageDoc>,
  releases: readonly Release[],
): Promise<void> {
  if (releases.length === 0) return;
  const ops = releases.map((r): AnyBulkWriteOperation<MessageDoc> => {
    const update: UpdateFilter<MessageDoc> =
      r.dueAt === undefined
        ? { $unset: { deliveryAt: "", deliveryLease: "" } }
        : { $set: { deliveryAt: r.dueAt }, $unset: { deliveryLease: "" } };
    if (r.unattempted) update.$inc = { submitAttempts: -1 };
    if (r.pinTo !== undefined) update.$set = { ...update.$set, carrier: r.pinTo };
    if (r.leave !== undefined) {
      update.$pull = { "route.carriers": r.leave };
      update.$push = { "route.refusedBy": r.leave };
    }
    return { updateOne: { filter: { _id: r.id }, update } };
  });
  await messages.bulkWrite(ops, { ordered: false });
}
