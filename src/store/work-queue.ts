import type { Collection, Filter } from "mongodb";
import { type BatchCommits, withoutUncommitted } from "./batch-commits.ts";
import type { MessageDoc } from "./documents.ts";

// The two queues on the messages collection (delivery steps and notifications) are claimed the
// same way: a due-time field that also carries the lease, and the lease owner beside it.

/**
 * `_id` condition for a chunk of ids: `$in` with the chunk's range in front. Same meaning; on the
 * test emulator (which checks a `$in` list linearly against every document it scans) the range
 * turns most documents away cheaply, several times faster for chunks of hundreds. Put it first in
 * the filter.
 */
export function idsIn<T extends number | string>(
  ids: readonly T[],
): { $gte: T; $lte: T; $in: T[] } {
  let min = ids[0] as T;
  let max = ids[0] as T;
  for (const id of ids) {
    if (id < min) min = id;
    if (id > max) max = id;
  }
  return { $gte: min, $lte: max, $in: [...ids] };
}

export interface ClaimOptions {
  now: Date;
  limit: number;
  leaseMs: number;
  /** Unique per claim: the instance id and a counter. */
  token: string;
  /** Messages of batches not committed yet are put back, not returned. */
  commits: BatchCommits;
}

export interface WorkQueue {
  due: "deliveryAt" | "notifyAt";
  lease: "deliveryLease" | "notifyLease";
  /** Further conditions a message must meet to be claimed. */
  claimable?: (now: Date) => Filter<MessageDoc>;
}

/**
 * Claims up to `limit` due messages: find due ids, one updateMany that re-checks due-ness per
 * document and pushes the due time to the lease's end (so two instances never claim the same
 * message), then read the chunk by id and keep what this claim got.
 */
export async function claimDue<T extends { _id: number; batchId?: number }>(
  messages: Collection<MessageDoc>,
  queue: WorkQueue,
  projection: Record<string, 1>,
  options: ClaimOptions,
): Promise<T[]> {
  const { now, limit, leaseMs, token } = options;
  if (limit <= 0) return [];
  // Oldest due first (the due-time index gives that order without sorting).
  const due = await messages
    .find({ [queue.due]: { $lte: now } }, { projection: { _id: 1 } })
    .sort({ [queue.due]: 1 })
    .limit(limit)
    .toArray();
  if (due.length === 0) return [];
  const ids = due.map((d) => d._id);
  const until = new Date(now.getTime() + leaseMs);
  await messages.updateMany(
    { _id: idsIn(ids), [queue.due]: { $lte: now }, ...queue.claimable?.(now) },
    { $set: { [queue.due]: until, [queue.lease]: { owner: token, until } } },
  );
  const docs = await messages
    .find({ _id: { $in: ids } }, { projection: { ...projection, batchId: 1, [queue.lease]: 1 } })
    .toArray();
  const claimed = docs.filter((doc) => doc[queue.lease]?.owner === token);
  const ready = await withoutUncommitted(messages, claimed, options.commits, queue, now);
  return ready.map((doc) => {
    const { [queue.lease]: _lease, ...rest } = doc;
    return rest as unknown as T;
  });
}
