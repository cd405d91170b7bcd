import { setImmediate as nextTurn } from "node:timers/promises";

// A batch's own work after parsing (checking, segmenting, pricing and building the documents of
// up to 10000 messages) runs in slices of about SLICE_MS, with a turn of the event loop between
// them, so other requests (/health/live among them) are answered meanwhile (issue 25, 2.1).

/**
 * How long a slice runs before it lets the event loop turn
 * (docs/decisions.md, "Sending (POST /sms, POST /sms-batch)").
 */
export const SLICE_MS = 10;

export class LoopSlices {
  private since = performance.now();

  constructor(private readonly sliceMs = SLICE_MS) {}

  /** Whether this slice has run its time (then await `next()`): checked without a promise. */
  due(): boolean {
    return performance.now() - this.since >= this.sliceMs;
  }

  /** Lets the event loop turn once, and starts the next slice. */
  async next(): Promise<void> {
    await nextTurn();
    this.since = performance.now();
  }
}

/** `items.map(fn)`, in order, in slices of the event loop (shared, so that they add up). */
export async function mapInSlices<T, R>(
  items: readonly T[],
  fn: (item: T, index: number) => R,
  slices = new LoopSlices(),
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  for (let i = 0; i < items.length; i++) {
    if (slices.due()) await slices.next();
    results[i] = fn(items[i] as T, i);
  }
  return results;
}
