import type { Collection, Document, Filter, UpdateFilter } from "mongodb";
import { type BatchCommits, withoutUncommitted } from "../store/batch-commits.ts";
import type { MessageDoc } from "../store/documents.ts";
import { idsIn } from "../store/id-ranges.ts";

// The queues on the messages collection (delivery steps and notifications) and the inbound
// messages' webhooks are claimed the same way: a due-time field that also carries the lease, and
// the lease owner beside it. Claims are taken per account lane (lanes.ts), so the filter names the
// account.

/** A document of a queue: an integer id, its account, and (messages) its batch. */
export interface QueuedDoc extends Document {
  _id: number;
  accountId: string;
  batchId?: number;
}

export interface ClaimOptions<D extends QueuedDoc = MessageDoc> {
  now: Date;
  limit: number;
  leaseMs: number;
  /** Unique per claim: the instance id and a counter. */
  token: string;
  /** Messages of batches not committed yet are put back, not returned; absent: no batches. */
  commits?: BatchCommits;
  /** Further conditions, e.g. the account of the lane being served. */
  filter?: Filter<D>;
  /** Reads the candidates in the order they are worked; default: earliest due first. */
  candidates?: (read: CandidateRead<D>) => Promise<D[]>;
}

/** What a claim's read of its candidates is given: up to `limit` due at `now`, among `filter`. */
export interface CandidateRead<D extends QueuedDoc = MessageDoc> {
  filter: Filter<D>;
  projection: Record<string, 1>;
  limit: number;
  now: Date;
}

export interface WorkQueue {
  due: "deliveryAt" | "notifyAt";
  lease: "deliveryLease" | "notifyLease";
  /** Further conditions a message must meet to be claimed. */
  claimable?: (now: Date) => Filter<QueuedDoc>;
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
export async function claimDue<
  T extends { _id: number; batchId?: number },
  D extends QueuedDoc = MessageDoc,
>(
  messages: Collection<D>,
  queue: WorkQueue,
  projection: Record<string, 1>,
  options: ClaimOptions<D>,
): Promise<T[]> {
  const { now, limit, leaseMs, token } = options;
  if (limit <= 0) return [];
  const fields: Record<string, 1> = { ...projection, batchId: 1 };
  const read: CandidateRead<D> = { filter: options.filter ?? {}, projection: fields, limit, now };
  const candidates = options.candidates
    ? await options.candidates(read)
    : ((await messages
        .find({ ...read.filter, [queue.due]: { $lte: now } }, { projection: fields })
        .sort({ [queue.due]: 1 })
        .limit(limit)
        .toArray()) as D[]);
  if (candidates.length === 0) return [];
  const ids = candidates.map((d) => d._id);
  const until = new Date(now.getTime() + leaseMs);
  // Whether their batches are committed is asked beside the update, not after it: a round trip
  // less on every round that meets a batch not seen committed yet (a loaded database's round trip
  // is what a newly due batch waits for, figure 6b).
  const [{ modifiedCount }, uncommitted] = await Promise.all([
    messages.updateMany(
      { _id: idsIn(ids), [queue.due]: { $lte: now }, ...queue.claimable?.(now) } as Filter<D>,
      {
        $set: { [queue.due]: until, [queue.lease]: { owner: token, until } },
        ...(queue.counter && { $inc: { [queue.counter]: 1 } }),
      } as UpdateFilter<D>,
    ),
    options.commits ? options.commits.uncommitted(candidates) : Promise.resolve([]),
  ]);
  let claimed: D[];
  if (modifiedCount === candidates.length) {
    // What the update wrote, applied to the read: the documents as a read now would return them.
    claimed = candidates.map((doc) => {
      const own: Record<string, unknown> = { ...doc };
      if (queue.due in projection) own[queue.due] = until;
      if (queue.counter && queue.counter in projection)
        own[queue.counter] = ((doc[queue.counter] as number | undefined) ?? 0) + 1;
      return own as D;
    });
  } else {
    const docs = (await messages
      .find({ _id: { $in: ids } } as Filter<D>, { projection: { ...fields, [queue.lease]: 1 } })
      .toArray()) as D[];
    // In due order (the read returns storage order): the carrier gets them in their queue's order.
    const order = new Map(ids.map((id, i) => [id, i]));
    claimed = docs
      .filter((doc) => doc[queue.lease]?.owner === token)
      .sort((a, b) => (order.get(a._id) ?? 0) - (order.get(b._id) ?? 0))
      .map(({ [queue.lease]: _lease, ...rest }) => rest as D);
  }
  if (!options.commits) return claimed as unknown as T[];
  const ready = await withoutUncommitted(
    messages as unknown as Collection<MessageDoc>,
    claimed,
    new Set(uncommitted),
    queue,
    now,
  );
  return ready as unknown as T[];
}

/** The earliest time a JavaScript Date holds. */
const EARLIEST_DATE = new Date(-8.64e15);

/** When the account's earliest queued work is due (leased work included: at its lease's end). */
export async function nextDueAt<D extends QueuedDoc>(
  messages: Collection<D>,
  queue: WorkQueue,
  accountId: string,
): Promise<Date | undefined> {
  // A range, not `$exists: true`: the account's index ({accountId, due}) keys the messages without
  // a due time (all its final ones) as null, which `$exists` would scan and fetch one by one
  // before the first due one; the range's bounds start past them.
  const [first] = await messages
    .find({ accountId, [queue.due]: { $gte: EARLIEST_DATE } } as Filter<D>, {
      projection: { _id: 0, [queue.due]: 1 },
    })
    .sort({ [queue.due]: 1 })
    .limit(1)
    .toArray();
  return first?.[queue.due] as Date | undefined;
}

/** Accounts with work overdue by more than `graceMs`: their lanes may have missed a mark. */
export async function accountsWithOverdueWork<D extends QueuedDoc>(
  messages: Collection<D>,
  queue: WorkQueue,
  now: Date,
  graceMs: number,
): Promise<string[]> {
  return (await messages.distinct("accountId", {
    [queue.due]: { $lte: new Date(now.getTime() - graceMs) },
  } as Filter<D>)) as string[];
}
