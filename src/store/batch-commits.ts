import type { Collection } from "mongodb";
import type { Deadline } from "./deadline.ts";
import type { BatchDoc, MessageDoc } from "./documents.ts";
import { mayHaveLanded } from "./write-outcomes.ts";

// A batch commits when its document is stored, after all its messages. Until then its messages
// are in the queues but must not be worked: the delivery worker and the notifier ask here and
// put such messages back for a moment. A crash before the commit leaves a pending charge that
// the settler rolls back, deleting the messages, so nothing of an uncommitted batch is ever sent.

/** A batch's messages are inserted in this many slices at once, of at least `MIN_SLICE` each. */
const INSERT_SLICES = 4;
const MIN_SLICE = 1000;

/**
 * Stores a batch: its messages, then its document, which commits them. The messages go in
 * parallel slices (each one `insertMany` on its own connection), so the service serialises one
 * slice while the database stores another instead of taking turns. Every call is issued under
 * `deadline`. On failure, part of the messages (or even the document) may be stored: see
 * `discardBatch`; an error whose write may still land is thrown in preference to a certain one.
 */
export async function storeBatch(
  collections: { messages: Collection<MessageDoc>; batches: Collection<BatchDoc> },
  messages: MessageDoc[],
  batch: BatchDoc,
  deadline?: Deadline,
): Promise<void> {
  const slices = Math.max(1, Math.min(INSERT_SLICES, Math.floor(messages.length / MIN_SLICE)));
  const size = Math.ceil(messages.length / slices);
  const outcomes = await Promise.allSettled(
    Array.from({ length: slices }, (_, i) =>
      collections.messages.insertMany(messages.slice(i * size, (i + 1) * size), {
        ordered: false,
        ...deadline?.options(),
      }),
    ),
  );
  const failures = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason] : []));
  if (failures.length > 0) throw failures.find(mayHaveLanded) ?? failures[0];
  await collections.batches.insertOne(batch, { ...deadline?.options() });
}

/**
 * Removes whatever of a batch was stored: the document first (so the batch reads as uncommitted
 * and the queues leave its messages alone), then the messages.
 */
export async function discardBatch(
  collections: { messages: Collection<MessageDoc>; batches: Collection<BatchDoc> },
  batchId: number,
): Promise<void> {
  await collections.batches.deleteOne({ _id: batchId });
  await collections.messages.deleteMany({ batchId });
}

/** How soon a message of a batch still being stored is looked at again. */
export const UNCOMMITTED_RETRY_MS = 500;

export class BatchCommits {
  /** Committed is forever, so positive answers are cached (bounded). */
  private readonly committed = new Set<number>();

  constructor(private readonly batches: Collection<BatchDoc>) {}

  /** The ids, among the given messages, of those whose batch is not committed yet. */
  async uncommitted(messages: readonly { _id: number; batchId?: number }[]): Promise<number[]> {
    const unknown = new Set<number>();
    for (const m of messages) {
      if (m.batchId !== undefined && !this.committed.has(m.batchId)) unknown.add(m.batchId);
    }
    if (unknown.size === 0) return [];
    const found = await this.batches
      .find({ _id: { $in: [...unknown] } }, { projection: { _id: 1 } })
      .toArray();
    if (this.committed.size > 100_000) this.committed.clear();
    for (const batch of found) this.committed.add(batch._id);
    return messages
      .filter((m) => m.batchId !== undefined && !this.committed.has(m.batchId))
      .map((m) => m._id);
  }
}

/**
 * Of the messages a claim got, puts those of uncommitted batches back (due again shortly, lease
 * dropped) and returns the others. `queue` names the due-time field and its lease.
 */
export async function withoutUncommitted<T extends { _id: number; batchId?: number }>(
  messages: Collection<MessageDoc>,
  claimed: T[],
  commits: BatchCommits,
  queue: {
    due: "deliveryAt" | "notifyAt";
    lease: "deliveryLease" | "notifyLease";
    counter?: "submitAttempts";
  },
  now: Date,
): Promise<T[]> {
  const waiting = new Set(await commits.uncommitted(claimed));
  if (waiting.size === 0) return claimed;
  await messages.updateMany(
    { _id: { $in: [...waiting] } },
    {
      $set: { [queue.due]: new Date(now.getTime() + UNCOMMITTED_RETRY_MS) },
      $unset: { [queue.lease]: "" },
      // not attempted after all
      ...(queue.counter && { $inc: { [queue.counter]: -1 } }),
    },
  );
  return claimed.filter((doc) => !waiting.has(doc._id));
}
