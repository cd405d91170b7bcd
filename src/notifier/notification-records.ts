/**
 * The notification queue's writes (docs/design.md "Status webhooks"): recording the results of a chunk of
 * claimed notifications in one bulkWrite. Claiming is in claiming.ts.
 *
 * A message's notifications are sent in order: only the first pending one is ever due, and
 * `notifyAt` is its due time (absent when none is pending). A claim pushes `notifyAt` forward by
 * the lease and records the owner in `notifyLease`, so two instances never claim the same
 * notification and a crashed instance's claims come due again when the lease runs out.
 */
import type { AnyBulkWriteOperation, Collection, UpdateFilter } from "mongodb";
import { type DeliveryClass, deliveryRank } from "../domain/delivery-priority.ts";
import { retryGroupOf } from "../domain/notify-groups.ts";
import type {
  MessageDoc,
  NotificationDoc,
  NotificationState,
  WebhookAttemptDoc,
} from "../store/documents.ts";

/** What became of the first pending notification of a claimed message. */
export interface NotificationOutcome {
  messageId: number;
  /** The message's class: its next notification is ranked by it (domain/delivery-priority.ts). */
  deliveryClass?: DeliveryClass;
  /**
   * The message's group (domain/notify-groups.ts): its next notification takes turns in it, a retry
   * in its retries' group; absent: the group stored is left as it is (removed with a final status).
   */
  group?: string;
  /** The claim token the message was claimed with: the outcome is recorded only while it holds. */
  claim: string;
  /** Index of the notification handled; `length` when none was pending. */
  index: number;
  /** `notifications.length` in the claimed snapshot. */
  length: number;
  /**
   * New state: a final one (the next notification becomes due), `pending` to look again at
   * `nextAttemptAt`, or undefined when there was no pending notification.
   */
  state?: NotificationState;
  attempt?: WebhookAttemptDoc;
  url?: string;
  /** With `pending`: when to look again. */
  nextAttemptAt?: Date;
  /** With `pending`: the notification was not attempted (its host was busy); its own retry time stays. */
  deferred?: boolean;
  /**
   * The handled notification is of a final status: no notification can follow it, so `notifyAt`
   * is removed outright instead of by the two grouped updates.
   */
  last?: boolean;
  /**
   * The handled notification as claimed; given whenever `index < length`. It is written back
   * whole, as one field (the claim owns it: status changes only append).
   */
  notification?: NotificationDoc;
  /**
   * The same claim goes on with the message's next notification (already in the snapshot):
   * record this one and keep the lease and the due time as they are.
   */
  keepLease?: boolean;
}

/**
 * Records the outcomes of claimed notifications in one bulkWrite. Each outcome is an update of its
 * message while the claim still holds (an instance whose lease ran out records nothing: the new
 * owner sends again, at least once); it ends the claim. A final state makes the next notification
 * due now when the snapshot had one; after the notification of a final status `notifyAt` simply
 * goes (nothing can follow it). Otherwise the next notification, index K, may have been appended
 * since the claim, and two `updateOne`s in this order settle it, one of which applies: "the claim
 * holds and there is no notification K" records and removes `notifyAt`, then "the claim still
 * holds" (so there is a K) records and makes it due. A status change that appends K after the
 * first sees no `notifyAt` and sets it itself (see statusChangeOps in src/store/status-changes.ts), so no
 * notification is left without a due time.
 *
 * Returns, for each outcome, the `notifyAt` its update may have left the message (undefined: none,
 * or the claim goes on), so that the caller marks the account's notify lane due at that time.
 */
export async function recordNotificationOutcomes(
  messages: Collection<MessageDoc>,
  outcomes: readonly NotificationOutcome[],
  now: Date,
): Promise<(Date | undefined)[]> {
  if (outcomes.length === 0) return [];
  const ops: AnyBulkWriteOperation<MessageDoc>[] = [];
  const dueAt: (Date | undefined)[] = [];
  for (const o of outcomes) {
    const set: Record<string, unknown> = {};
    const unset: Record<string, ""> = { notifyLease: "" };
    const handled = o.index < o.length;
    if (handled && !o.notification)
      throw new Error(`outcome of message ${o.messageId} lacks its claimed notification`);
    // Fields of the handled notification: set (or removed, when undefined) with it.
    const fields: Partial<Record<keyof NotificationDoc, unknown>> = {};
    if (handled) {
      if (o.state !== undefined) fields.state = o.state;
      if (o.url !== undefined) fields.url = o.url;
    }
    // The next notification is due now, ranked in its account's queue by the message's class.
    const nextDue = deliveryRank(now, o.deliveryClass);
    let unlessNext: number | undefined;
    // The group its next notification takes turns in: its own; a retry, its retries' group; after
    // a final status none (no notification can follow, and the groups' index keeps only the live).
    if (o.group !== undefined) set.notifyGroup = o.group;
    if (o.keepLease) {
      delete unset.notifyLease;
      fields.nextAttemptAt = undefined;
    } else if (o.state === "pending") {
      const at = o.nextAttemptAt ?? now;
      set.notifyAt = at;
      if (!o.deferred) {
        fields.nextAttemptAt = at;
        if (o.group !== undefined) set.notifyGroup = retryGroupOf(o.group);
      } else delete set.notifyGroup; // put back as it was: its group stays
    } else {
      fields.nextAttemptAt = undefined;
      const next = handled ? o.index + 1 : o.length;
      if (next < o.length) set.notifyAt = nextDue;
      else if (handled && o.last) {
        unset.notifyAt = "";
        unset.notifyGroup = "";
        delete set.notifyGroup;
      } else unlessNext = next;
    }
    if (o.notification && handled) {
      const whole: Record<string, unknown> = { ...o.notification };
      for (const [field, value] of Object.entries(fields)) {
        if (value === undefined) delete whole[field];
        else whole[field] = value;
      }
      if (o.attempt) whole.attempts = [...o.notification.attempts, o.attempt];
      set[`notifications.${o.index}`] = whole;
    }
    const update = (extraSet: Record<string, unknown>, extraUnset: Record<string, "">) => {
      const u: Record<string, unknown> = { $unset: { ...unset, ...extraUnset } };
      if (Object.keys(set).length + Object.keys(extraSet).length > 0)
        u.$set = { ...set, ...extraSet };
      return u as UpdateFilter<MessageDoc>;
    };
    // When the update leaves a notification due: the time set, or now when the next
    // notification may have been appended since the claim.
    dueAt.push(unlessNext === undefined ? (set.notifyAt as Date | undefined) : nextDue);
    const claimed = { _id: o.messageId, "notifyLease.owner": o.claim };
    if (unlessNext === undefined) {
      ops.push({ updateOne: { filter: claimed, update: update({}, {}) } });
      continue;
    }
    ops.push({
      updateOne: {
        filter: { ...claimed, [`notifications.${unlessNext}`]: { $exists: false } },
        update: update({}, { notifyAt: "" }),
      },
    });
    ops.push({ updateOne: { filter: claimed, update: update({ notifyAt: nextDue }, {}) } });
  }
  await messages.bulkWrite(ops, { ordered: true });
  return dueAt;
}
