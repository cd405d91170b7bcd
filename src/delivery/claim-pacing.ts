/**
 * How much the delivery worker claims, and when: only what its carrier can take soon, so the
 * backlog stays in the database, where the next claim picks the best next work (the lanes), rather
 * than queueing in the process behind work claimed earlier.
 *
 * - `window`: parts submitted and not yet recorded, at most the carrier's window (the crash bound).
 * - `claimed`: parts claimed and not yet recorded: the window plus a little ahead of it, so that
 *   claiming (a few database round trips) runs ahead of the carrier instead of in its way.
 * - `bucket`: for a carrier with a throughput limit, tokens at that rate.
 *
 * A claim round reserves its budget from `claimed` and the bucket before it claims, and gives back
 * what it did not claim; a round that claimed more (a first message longer than its share) leaves
 * the bucket in debt, which the next rounds wait for.
 */

import { TokenBucket, Window } from "../scheduling/throttle.ts";
import type { CarrierLimits } from "./carrier.ts";
import { TYPICAL_LONGEST_MESSAGE } from "./submission.ts";

/** Parts claimed ahead of a carrier without a throughput limit at least (one bind's window is 10). */
const UNLIMITED_AHEAD_MINIMUM = 100;

export class ClaimPacing {
  readonly window: Window;
  readonly claimed: Window;
  readonly bucket: TokenBucket | undefined;
  /** The budget a claim round waits for. */
  readonly roundMinimum: number;

  /**
   * `claimAheadParts`: parts claimed beyond the window. Newly due work waits behind them, so by
   * default a carrier with a throughput limit gets at most a tenth of a second of it (and no more
   * than its window); one without gets a quarter of its window, at least 100 (docs/decisions.md,
   * "Delivery and carriers").
   */
  constructor(limits: CarrierLimits, claimAheadParts?: number) {
    const { partsPerSecond } = limits;
    this.window = new Window(Math.max(1, limits.window));
    const ahead =
      claimAheadParts ??
      (partsPerSecond === undefined
        ? Math.max(Math.ceil(this.window.size / 4), UNLIMITED_AHEAD_MINIMUM)
        : Math.min(this.window.size, Math.ceil(partsPerSecond / 10)));
    this.claimed = new Window(this.window.size + Math.max(0, ahead));
    if (partsPerSecond !== undefined) {
      // Half a second of throughput per round at most: claims stay small, so a newly due lane
      // waits for about that before its turn, and large enough that a round's own database round
      // trips (half a dozen, slower on a loaded database) do not hold the carrier below its rate.
      this.bucket = new TokenBucket(partsPerSecond, Math.max(1, partsPerSecond / 2));
    }
    // A round waits for a worthwhile budget (half a bucket, or an eighth of the parts claimed, and
    // room for a long message): fewer, larger claims at the same pace. Never for more than a round
    // can ever get: a bucket below 20 parts/s saves up less than a long message, so its rounds
    // wait for a full bucket, and a longer message goes alone into the bucket's debt.
    const largestRound = this.bucket
      ? Math.min(this.claimed.size, Math.floor(this.bucket.capacity))
      : this.claimed.size;
    const worthwhile = this.bucket
      ? Math.floor(this.bucket.capacity / 2)
      : Math.floor(this.claimed.size / 8);
    this.roundMinimum = Math.min(largestRound, Math.max(worthwhile, TYPICAL_LONGEST_MESSAGE));
  }

  /** Parts the carrier can take now. */
  budget(): number {
    const free = this.claimed.free;
    return this.bucket ? Math.min(free, this.bucket.available()) : free;
  }

  /**
   * When a round may start: 0 now; a number of ms for a bucket to fill; undefined when the claimed
   * parts are at their bound (the claim that frees them wakes the worker).
   */
  nextRoundInMs(): number | undefined {
    if (this.budget() >= this.roundMinimum) return 0;
    if (this.bucket && this.claimed.free >= this.roundMinimum)
      return this.bucket.msUntil(this.roundMinimum);
    return undefined;
  }

  /** Takes a round's budget before it claims. */
  reserve(budget: number): void {
    this.claimed.take(budget);
    this.bucket?.take(budget);
  }

  /** After the round: what it did not claim goes back (what it claimed beyond, is owed). */
  settle(budget: number, claimedParts: number): void {
    this.claimed.give(budget - claimedParts);
    this.bucket?.take(claimedParts - budget);
  }
}
