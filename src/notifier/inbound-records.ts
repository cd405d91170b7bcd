/**
 * The inbound webhooks' writes: what became of a chunk of claimed webhooks, in one bulkWrite on
 * the inbound messages (as notification-records.ts does for status notifications). Each update
 * holds only while the claim does (an instance whose lease ran out records nothing: the new owner
 * sends again, at least once).
 *
 * A webhook delivered, given up or skipped is final: `notifyAt` goes, and the messages of the
 * same sender that wait behind it (inbound-claims.ts) are made due now.
 */
import type { AnyBulkWriteOperation, Collection, Filter, UpdateFilter } from "mongodb";
import type { NotificationState, WebhookAttemptDoc } from "../store/documents.ts";
import type { InboundMessageDoc } from "../store/inbound-messages.ts";

/** What became of one claimed inbound webhook. */
export interface InboundOutcome {
  messageId: number;
  accountId: string;
  /** The sender: its waiting messages follow a final outcome. */
  from: string;
  /** The claim token it was claimed with. */
  claim: string;
  /** Final (delivered, gave_up, skipped), or `pending`: due again at `nextAttemptAt`. */
  state: NotificationState;
  attempt?: WebhookAttemptDoc;
  url?: string;
  nextAttemptAt?: Date;
  /**
   * With `pending`: not attempted (its receiver was busy, or an older message of its sender
   * failed); its own retry time stays.
   */
  deferred?: boolean;
}

/**
 * Records the outcomes in one ordered bulkWrite. Answers, for each, the time its account's
 * `inbound` lane is to be marked due at: a pending webhook's next time; for a final one now, when
 * some message of a sender waited behind it (else undefined).
 */
export async function recordInboundOutcomes(
  inbound: Collection<InboundMessageDoc>,
  outcomes: readonly InboundOutcome[],
  now: Date,
): Promise<(Date | undefined)[]> {
  if (outcomes.length === 0) return [];
  const ops: AnyBulkWriteOperation<InboundMessageDoc>[] = [];
  const dueAt: (Date | undefined)[] = [];
  const finals: number[] = [];
  for (const [i, o] of outcomes.entries()) {
    const filter: Filter<InboundMessageDoc> = { _id: o.messageId, "notifyLease.owner": o.claim };
    const set: Record<string, unknown> = {};
    const unset: Record<string, ""> = { notifyLease: "" };
    if (o.url !== undefined) set["webhook.url"] = o.url;
    if (o.state === "pending") {
      const at = o.nextAttemptAt ?? now;
      set.notifyAt = at;
      if (!o.deferred) set["webhook.nextAttemptAt"] = at;
      dueAt.push(at);
    } else {
      set["webhook.state"] = o.state;
      unset.notifyAt = "";
      unset["webhook.nextAttemptAt"] = "";
      dueAt.push(undefined);
      finals.push(i);
    }
    const update: Record<string, unknown> = { $set: set, $unset: unset };
    if (o.attempt) update.$push = { "webhook.attempts": o.attempt };
    ops.push({ updateOne: { filter, update: update as UpdateFilter<InboundMessageDoc> } });
    if (o.state !== "pending") {
      // Its sender's messages put back behind it (never attempted, not claimed): due now.
      ops.push({
        updateMany: {
          filter: {
            accountId: o.accountId,
            from: o.from,
            notifyAt: { $gt: now },
            notifyLease: { $exists: false },
            "webhook.nextAttemptAt": { $exists: false },
          },
          update: { $set: { notifyAt: now } },
        },
      });
    }
  }
  const result = await inbound.bulkWrite(ops, { ordered: true });
  // Each outcome's own update modifies one document at most: anything beyond woke a waiting one.
  if (result.modifiedCount > outcomes.length) for (const i of finals) dueAt[i] = now;
  return dueAt;
}
