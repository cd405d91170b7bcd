import { setImmediate as nextTurn } from "node:timers/promises";
import type { Collection } from "mongodb";
import type { Deadline } from "./deadline.ts";
import type { BatchDoc, MessageDoc } from "./documents.ts";
import { mayHaveLanded } from "./write-outcomes.ts";

// A batch commits when its document is stored, after all its messages. Until then its messages
// are in the queues but must not be worked: the delivery worker and the notifier ask here and
// put such messages back for a moment. A crash before the commit leaves a pending charge that
// the settler rolls back, deleting the messages, so nothing of an uncommitted batch is ever sent.

/** At most this many of a batch's `insertMany` chunks are in flight at once. */
const CHUNKS_IN_FLIGHT = 4;
/** A chunk holds at most this many messages… */
const CHUNK_MESSAGES = 1000;
/** …and about this many bytes of BSON at most (estimated from its texts). */
const CHUNK_BYTES = 1024 * 1024;

/**
 * Stores a batch: its messages, then its document, which commits them. The messages go in
 * chunks of at most CHUNK_MESSAGES and about CHUNK_BYTES (each one `insertMany`), up to
 * CHUNKS_IN_FLIGHT at once, so the service serialises one chunk while the database stores
 * another. The driver serialises a chunk's documents in one synchronous stretch when it is
 * issued: the chunks are issued one per turn of the event loop, so no stretch is longer than one
 * chunk's (issue 25, 2.1; 10000 messages in one go blocked the loop 0.2 to 0.9 s). Every call is
 * issued under `deadline`; after a chunk fails no further chunk is issued. On failure, part of
 * the messages (or even the document) may be stored: see `discardBatch`; an error whose write
 * may still land is thrown in preference to a certain one.
 */
export async function storeBatch(
  collections: { messages: Collection<MessageDoc>; batches: Collection<BatchDoc> },
  messages: MessageDoc[],
  batch: BatchDoc,
  deadline?: Deadline,
): Promise<void> {
  const failures: unknown[] = [];
  const inFlight = new Set<Promise<void>>();
  for (const chunk of insertChunks(messages)) {
    if (inFlight.size >= CHUNKS_IN_FLIGHT) await Promise.race(inFlight);
    // A turn between two chunks' serialisation lets other requests in.
    await nextTurn();
    if (failures.length > 0) break;
    const insert = async () => {
      await collections.messages.insertMany(chunk, { ordered: false, ...deadline?.options() });
    };
    const write = insert()
      .catch((error: unknown) => {
        failures.push(error);
      })
      .finally(() => inFlight.delete(write));
    inFlight.add(write);
  }
  await Promise.all(inFlight);
  if (failures.length > 0) throw failures.find(mayHaveLanded) ?? failures[0];
  await collections.batches.insertOne(batch, { ...deadline?.options() });
}

/**
 * `messages` in order, cut into chunks of at most CHUNK_MESSAGES and about CHUNK_BYTES of BSON
 * (a text's characters count up to three bytes each, in the text and again in its segments).
 */
export function* insertChunks(messages: readonly MessageDoc[]): Generator<MessageDoc[]> {
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as MessageDoc;
    const size = 512 + 3 * (message.text.length + (message.segments ? message.text.length : 0));
    if (i > start && (i - start >= CHUNK_MESSAGES || bytes + size > CHUNK_BYTES)) {
      yield messages.slice(start, i);
      start = i;
      bytes = 0;
    }
    bytes += size;
  }
  if (start < messages.length) yield messages.slice(start);
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
 * dropped) and returns the others. `waiting`: the ids `BatchCommits.uncommitted` found among the
 * claim's candidates, asked beside the claim's update (a batch that commits in between is only
 * looked at again shortly). `queue` names the due-time field and its lease.
 */
export async function withoutUncommitted<T extends { _id: number }>(
  messages: Collection<MessageDoc>,
  claimed: T[],
  waiting: ReadonlySet<number>,
  queue: {
    due: "deliveryAt" | "notifyAt";
    lease: "deliveryLease" | "notifyLease";
    counter?: "submitAttempts";
  },
  now: Date,
): Promise<T[]> {
  const back = claimed.filter((doc) => waiting.has(doc._id)).map((doc) => doc._id);
  if (back.length === 0) return claimed;
  await messages.updateMany(
    { _id: { $in: back } },
    {
      $set: { [queue.due]: new Date(now.getTime() + UNCOMMITTED_RETRY_MS) },
      $unset: { [queue.lease]: "" },
      // not attempted after all
      ...(queue.counter && { $inc: { [queue.counter]: -1 } }),
    },
  );
  return claimed.filter((doc) => !waiting.has(doc._id));
}
