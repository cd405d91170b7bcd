/**
 * A message's status changes, as atomic single-document updates: every status change writes, in
 * the same update, the new status and its pending notification (docs/design.md "Status webhooks"), so a
 * status change is never without its webhook. Used by the delivery engine (submissions, receipts,
 * expiries) and the notifier's queue rules rely on it (src/notifier/notification-records.ts).
 *
 * Shape of the writes: conditional updates (filtered on the expected status) are grouped into
 * `updateMany` over the messages' ids wherever the update is the same for every message, and are
 * `updateOne`s filtered on `_id` plus conditions where the values differ per message. On the test
 * emulator an `updateMany` scans the collection once, and a filter that pins `_id` is served by
 * the `_id` index.
 */

import type { AnyBulkWriteOperation, Collection, Filter, UpdateFilter } from "mongodb";
import { type DeliveryClass, deliveryRank } from "../domain/delivery-priority.ts";
import type { ReasonName, StatusName } from "../domain/message-status.ts";
import type { MessageDoc, NotificationDoc } from "./documents.ts";
import { idsIn } from "./id-ranges.ts";

/** A new pending notification, pushed in the same update as its status change. */
export function pendingNotification(status: StatusName, now: Date): NotificationDoc {
  return { status, state: "pending", createdAt: now, attempts: [] };
}

export interface StatusChange {
  status: StatusName;
  reason?: ReasonName;
  /** Further fields to set in the same update. */
  set?: Partial<MessageDoc>;
  /** Fields to remove in the same update. */
  unset?: (keyof MessageDoc)[];
}

/**
 * The two updates of one status change: `ifPending` for a message that has a pending notification
 * (`notifyAt` present: the new notification queues behind it and `notifyAt` stays), `ifIdle` for
 * one that has none (the new notification is due now). See `statusChangeOps` for how they combine.
 */
export function statusChangeUpdates(
  change: StatusChange,
  now: Date,
  cls?: DeliveryClass,
): { ifPending: UpdateFilter<MessageDoc>; ifIdle: UpdateFilter<MessageDoc> } {
  const set: Record<string, unknown> = { ...change.set, status: change.status, updatedAt: now };
  if (change.reason !== undefined) set.reason = change.reason;
  const unset: Record<string, ""> = {};
  for (const field of change.unset ?? []) unset[field] = "";
  const push = { notifications: pendingNotification(change.status, now) };
  const build = (extraSet: Record<string, unknown>): UpdateFilter<MessageDoc> => {
    const update: Record<string, unknown> = { $set: { ...set, ...extraSet }, $push: push };
    if (Object.keys(unset).length > 0) update.$unset = unset;
    return update as UpdateFilter<MessageDoc>;
  };
  // The new notification is due now, ranked in its account's queue by the message's class.
  return { ifPending: build({}), ifIdle: build({ notifyAt: deliveryRank(now, cls) }) };
}

/**
 * A status change of the messages `ids` that are in one of the `from` statuses (and match
 * `filter`), as two updateMany to run in this order: first for those with a pending notification
 * (`notifyAt` present), then for those without. At most one applies to a message: the first
 * changes the status the second filters on. Between the two, `notifyAt` can appear on a message
 * only through another status change (which the status filter excludes), and the notifier removes
 * it only with a check that no notification was appended, so no status change falls between them;
 * `changeStatus` verifies anyway.
 */
export function statusChangeOps(
  ids: readonly number[],
  from: readonly StatusName[],
  change: StatusChange,
  now: Date,
  filter: Filter<MessageDoc> = {},
  classes?: ReadonlyMap<number, DeliveryClass>,
): AnyBulkWriteOperation<MessageDoc>[] {
  const byClass = new Map<DeliveryClass | undefined, number[]>();
  for (const id of ids) {
    const cls = classes?.get(id);
    byClass.set(cls, [...(byClass.get(cls) ?? []), id]);
  }
  return [...byClass].flatMap(([cls, group]) =>
    pendingThenIdle(
      "updateMany",
      { _id: idsIn(group), ...inStatus(from), ...filter },
      change,
      now,
      cls,
    ),
  );
}

/** The two updates of a status change over `base`, in their order (see statusChangeOps). */
function pendingThenIdle(
  kind: "updateMany" | "updateOne",
  base: Filter<MessageDoc>,
  change: StatusChange,
  now: Date,
  cls: DeliveryClass | undefined,
): AnyBulkWriteOperation<MessageDoc>[] {
  const { ifPending, ifIdle } = statusChangeUpdates(change, now, cls);
  const op = (notifying: boolean, update: UpdateFilter<MessageDoc>) => {
    const spec = {
      filter: { ...base, notifyAt: { $exists: notifying } } as Filter<MessageDoc>,
      update,
    };
    return (
      kind === "updateMany" ? { updateMany: spec } : { updateOne: spec }
    ) as AnyBulkWriteOperation<MessageDoc>;
  };
  return [op(true, ifPending), op(false, ifIdle)];
}

function inStatus(from: readonly StatusName[]): Filter<MessageDoc> {
  return { status: from.length === 1 ? (from[0] as StatusName) : { $in: [...from] } };
}

/**
 * Runs `statusChangeOps` (one bulkWrite) and returns how many messages changed. When fewer changed
 * than `ids`, the messages still in a `from` status for which `stillDue` holds are tried again
 * (twice at most): a belt to the braces of the argument above.
 */
export async function changeStatus(
  messages: Collection<MessageDoc>,
  ids: readonly number[],
  from: readonly StatusName[],
  change: StatusChange,
  now: Date,
  options: {
    filter?: Filter<MessageDoc>;
    stillDue?: (doc: MessageDoc) => boolean;
    /** The messages' classes, which rank their new notifications. */
    classes?: ReadonlyMap<number, DeliveryClass>;
  } = {},
): Promise<number> {
  let remaining = [...ids];
  let changed = 0;
  for (let round = 0; round < 3 && remaining.length > 0; round++) {
    const result = await messages.bulkWrite(
      statusChangeOps(remaining, from, change, now, options.filter, options.classes),
      {
        ordered: true,
      },
    );
    changed += result.modifiedCount;
    if (result.modifiedCount >= remaining.length) break;
    const left = await messages
      .find(
        { _id: { $in: remaining } },
        { projection: { _id: 1, status: 1, expiresAt: 1, deliveredParts: 1 } },
      )
      .toArray();
    remaining = left
      .filter(
        (doc) =>
          from.includes(doc.status) &&
          (options.stillDue ? options.stillDue(doc as MessageDoc) : true),
      )
      .map((doc) => doc._id);
  }
  return changed;
}

/** One message's own status change (per-message values), for `changeStatusEach`. */
export interface MessageStatusChange {
  id: number;
  deliveryClass?: DeliveryClass;
  from: readonly StatusName[];
  change: StatusChange;
}

/** A message's status change as two `updateOne`s (see statusChangeOps for the order and why). */
export function messageStatusChangeOps(
  { id, from, change, deliveryClass }: MessageStatusChange,
  now: Date,
): AnyBulkWriteOperation<MessageDoc>[] {
  return pendingThenIdle("updateOne", { _id: id, ...inStatus(from) }, change, now, deliveryClass);
}

/**
 * Status changes that differ per message, in one bulkWrite of `updateOne`s filtered on `_id` and
 * the expected status; verified like `changeStatus`. Returns how many messages changed.
 */
export async function changeStatusEach(
  messages: Collection<MessageDoc>,
  changes: readonly MessageStatusChange[],
  now: Date,
): Promise<number> {
  let remaining = [...changes];
  let changed = 0;
  for (let round = 0; round < 3 && remaining.length > 0; round++) {
    const ops = remaining.flatMap((c) => messageStatusChangeOps(c, now));
    const result = await messages.bulkWrite(ops, { ordered: true });
    changed += result.modifiedCount;
    if (result.modifiedCount >= remaining.length) break;
    const left = await messages
      .find({ _id: { $in: remaining.map((c) => c.id) } }, { projection: { _id: 1, status: 1 } })
      .toArray();
    const statusOf = new Map(left.map((d) => [d._id, d.status]));
    remaining = remaining.filter((c) => {
      const status = statusOf.get(c.id);
      return status !== undefined && c.from.includes(status);
    });
  }
  return changed;
}
