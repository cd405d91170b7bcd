import type { Collection, Filter } from "mongodb";
import { type BatchCommits, withoutUncommitted } from "../../store/batch-commits.ts";
import type { MessageDoc } from "../../store/documents.ts";
import { idsIn } from "../../store/id-ranges.ts";

// The two queues on the messages collection (delivery steps and notifications) are claimed the
// same way: a due-time field that also carries the lease, and the lease owner beside it. Claims
// are taken per account lane (lanes.ts), so the filter names the account.

export interface ClaimOptions {
  now: Date;
  limit: number;
  leaseMs: number;
  /** Unique per claim: the instance id and a counter. */
  token: string;
  /** Messages of batches not committed yet are put back, not returned. */
  commits: BatchCommits;
  /** Further conditions, e.g. the account of the lane being served. */
  filter?: Filter<MessageDoc>;
}

export interface WorkQueue {
  due: "deliveryAt" | "notifyAt";
  lease: "deliveryLease" | "notifyLease";
  /** Further conditions a message must meet to be claimed. */
  claimable?: (now: Date) => Filter<MessageDoc>;
  /** A counter the claim's own update increments, and a put-back decrements (delivery: attempts). */
  counter?: "submitAttempts";
}

/**
 * Claims up to `limit` due messages: find due ids (earliest due first), one updateMany that
 * re-checks due-ness per document and pushes the due time to the lease's end (so two instances
 * never claim the same message), then read the chunk by id and keep what this claim got.
 */
export async function claimDue<T extends { _id: number; batchId?: number }>(
  messages: Collection<MessageDoc>,
  queue: WorkQueue,
  projection: Record<string, 1>,
  options: ClaimOptions,
): Promise<T[]> {
  const { now, limit, leaseMs, token } = options;
  if (limit <= 0) return [];
  const due = await messages
    .find({ ...options.filter, [queue.due]: { $lte: now } }, { projection: { _id: 1 } })
    .sort({ [queue.due]: 1 })
    .limit(limit)
    .toArray();
  if (due.length === 0) return [];
  const ids = due.map((d) => d._id);
  const until = new Date(now.getTime() + leaseMs);
  await messages.updateMany(
    { _id: idsIn(ids), [queue.due]: { $lte: now }, ...queue.claimable?.(now) },
    {
      $set: { [queue.due]: until, [queue.lease]: { owner: token, until } },
      ...(queue.counter && { $inc: { [queue.counter]: 1 } }),
    },
  );
  const docs = await messages
    .find({ _id: { $in: ids } }, { projection: { ...projection, batchId: 1, [queue.lease]: 1 } })
    .toArray();
  // In due order (the read returns storage order): the carrier gets them in their queue's order.
  const order = new Map(ids.map((id, i) => [id, i]));
  const claimed = docs
    .filter((doc) => doc[queue.lease]?.owner === token)
    .sort((a, b) => (order.get(a._id) ?? 0) - (order.get(b._id) ?? 0));
  const ready = await withoutUncommitted(messages, claimed, options.commits, queue, now);
  return ready.map((doc) => {
    const { [queue.lease]: _lease, ...rest } = doc;
    return rest as unknown as T;
  });
}

/** When the account's earliest queued work is due (leased work included: at its lease's end). */
export async function nextDueAt(
  messages: Collection<MessageDoc>,
  queue: WorkQueue,
  accountId: string,
): Promise<Date | undefined> {
  const [first] = await messages
    .find({ accountId, [queue.due]: { $exists: true } }, { projection: { _id: 0, [queue.due]: 1 } })
    .sort({ [queue.due]: 1 })
    .limit(1)
    .toArray();
  return first?.[queue.due];
}

/** Accounts with work overdue by more than `graceMs`: their lanes may have missed a mark. */
export async function accountsWithOverdueWork(
  messages: Collection<MessageDoc>,
  queue: WorkQueue,
  now: Date,
  graceMs: number,
): Promise<string[]> {
  return messages.distinct("accountId", {
    [queue.due]: { $lte: new Date(now.getTime() - graceMs) },
  });
}
