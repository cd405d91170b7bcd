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
  /** Reads the candidates in the order they are worked; default: earliest due first. */
  candidates?: (read: CandidateRead) => Promise<MessageDoc[]>;
}

/** What a claim's read of its candidates is given: up to `limit` due at `now`, among `filter`. */
export interface CandidateRead {
  filter: Filter<MessageDoc>;
  projection: Record<string, 1>;
  limit: number;
  now: Date;
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
 * Claims up to `limit` due messages: read the due candidates (earliest due first, or in the order
 * `options.candidates` gives), then one
 * updateMany that re-checks due-ness per document and pushes the due time to the lease's end (so
 * two instances never claim the same message). When the update took every candidate, the read is
 * what was claimed (the fields a claim reads change only with the due time the update re-checked);
 * when another claim took some meanwhile, the candidates are read again and only this claim's kept.
 */
export async function claimDue<T extends { _id: number; batchId?: number }>(
  messages: Collection<MessageDoc>,
  queue: WorkQueue,
  projection: Record<string, 1>,
  options: ClaimOptions,
): Promise<T[]> {
  const { now, limit, leaseMs, token } = options;
  if (limit <= 0) return [];
  const fields: Record<string, 1> = { ...projection, batchId: 1 };
  const read: CandidateRead = { filter: options.filter ?? {}, projection: fields, limit, now };
  const candidates = options.candidates
    ? await options.candidates(read)
    : await messages
        .find({ ...read.filter, [queue.due]: { $lte: now } }, { projection: fields })
        .sort({ [queue.due]: 1 })
        .limit(limit)
        .toArray();
  if (candidates.length === 0) return [];
  const ids = candidates.map((d) => d._id);
  const until = new Date(now.getTime() + leaseMs);
  const { modifiedCount } = await messages.updateMany(
    { _id: idsIn(ids), [queue.due]: { $lte: now }, ...queue.claimable?.(now) },
    {
      $set: { [queue.due]: until, [queue.lease]: { owner: token, until } },
      ...(queue.counter && { $inc: { [queue.counter]: 1 } }),
    },
  );
  let claimed: MessageDoc[];
  if (modifiedCount === candidates.length) {
    // What the update wrote, applied to the read: the documents as a read now would return them.
    claimed = candidates.map((doc) => {
      const own = { ...doc } as MessageDoc;
      if (queue.due in projection) own[queue.due] = until;
      if (queue.counter && queue.counter in projection)
        own[queue.counter] = (doc[queue.counter] ?? 0) + 1;
      return own;
    });
  } else {
    const docs = await messages
      .find({ _id: { $in: ids } }, { projection: { ...fields, [queue.lease]: 1 } })
      .toArray();
    // In due order (the read returns storage order): the carrier gets them in their queue's order.
    const order = new Map(ids.map((id, i) => [id, i]));
    claimed = docs
      .filter((doc) => doc[queue.lease]?.owner === token)
      .sort((a, b) => (order.get(a._id) ?? 0) - (order.get(b._id) ?? 0))
      .map(({ [queue.lease]: _lease, ...rest }) => rest as MessageDoc);
  }
  const ready = await withoutUncommitted(messages, claimed, options.commits, queue, now);
  return ready as unknown as T[];
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
