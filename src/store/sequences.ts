import type { Collection } from "mongodb";
import type { CounterDoc } from "./documents.ts";

export const SEQUENCES = ["message", "batch", "inbound"] as const;
export type SequenceName = (typeof SEQUENCES)[number];

/**
 * Reserves `count` consecutive ids of a sequence in one atomic update and returns the first.
 * Ids start at 1; a reserved range is never handed out again, even if unused after a crash.
 */
export async function reserveIds(
  counters: Collection<CounterDoc>,
  name: SequenceName,
  count: number,
): Promise<number> {
  const doc = await counters.findOneAndUpdate(
    { _id: name },
    { $inc: { seq: count } },
    { upsert: true, returnDocument: "after" },
  );
  if (!doc) throw new Error(`sequence ${name} returned no document`);
  return doc.seq - count + 1;
}

/**
 * Hands out ids one or a few at a time from ranges reserved in blocks, so a single send costs
 * no sequence round trip most of the time. Ids stay unique across instances; they are
 * increasing per instance, not globally.
 */
export class IdAllocator {
  private next = 0;
  private end = 0;
  private refill: Promise<void> | undefined;

  constructor(
    private readonly counters: Collection<CounterDoc>,
    private readonly name: SequenceName,
    private readonly blockSize = 200,
  ) {}

  /** Returns the first of `count` consecutive ids. Large requests get a range of their own. */
  async take(count: number): Promise<number> {
    if (count > this.blockSize / 4) return reserveIds(this.counters, this.name, count);
    for (;;) {
      if (this.end - this.next >= count) {
        const first = this.next;
        this.next += count;
        return first;
      }
      this.refill ??= reserveIds(this.counters, this.name, this.blockSize).then(
        (first) => {
          this.next = first;
          this.end = first + this.blockSize;
          this.refill = undefined;
        },
        (error: unknown) => {
          this.refill = undefined;
          throw error;
        },
      );
      await this.refill;
    }
  }
}
