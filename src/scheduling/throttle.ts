/**
 * Pacing of submissions to a carrier: a token bucket for its throughput (parts per second) and a
 * window of parts in flight. The worker claims only what both allow now, so the backlog stays in
 * the database, where the lanes order it fairly, and a crash finds at most the window in flight.
 */

/** A token bucket: `ratePerSecond` tokens a second, at most `capacity` saved up. May go into debt. */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly ratePerSecond: number,
    readonly capacity: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = capacity;
    this.last = now();
  }

  /** Whole tokens available now (0 while in debt). */
  available(): number {
    this.refill();
    return Math.max(0, Math.floor(this.tokens));
  }

  /** Takes `n` tokens, going into debt if there are fewer. */
  take(n: number): void {
    this.refill();
    this.tokens -= n;
  }

  /** Milliseconds until `n` tokens are available (0 if they are). */
  msUntil(n: number): number {
    this.refill();
    const missing = n - this.tokens;
    return missing <= 0 ? 0 : Math.ceil((missing / this.ratePerSecond) * 1000);
  }

  private refill(): void {
    const now = this.now();
    this.tokens = Math.min(
      this.capacity,
      this.tokens + ((now - this.last) / 1000) * this.ratePerSecond,
    );
    this.last = now;
  }
}

/**
 * At most `limit` events in any `periodMs` (a sliding second by default), as an SMSC counts its
 * TPS: a token bucket at the same rate lets its capacity more through in the second after a pause.
 * Keeps the last `limit` event times.
 */
export class SlidingLimit {
  private readonly times: number[];
  private next = 0;

  constructor(
    readonly limit: number,
    readonly periodMs = 1_000,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.times = new Array<number>(limit).fill(Number.NEGATIVE_INFINITY);
  }

  /** Milliseconds until one more event fits (0 if it does now). */
  msUntilFree(): number {
    const oldest = this.times[this.next] as number;
    return Math.max(0, Math.ceil(oldest + this.periodMs - this.now()));
  }

  /** Counts one event now (whether or not it fitted). */
  record(): void {
    this.times[this.next] = this.now();
    this.next = (this.next + 1) % this.limit;
  }
}

/**
 * Parts in flight against a window; `free` may be negative after one oversized message. `take` and
 * `give` count at once; `acquire` waits its turn (by rank, then first come, first served) until
 * the parts fit.
 */
export class Window {
  private used = 0;
  private readonly waiting: { n: number; rank: number; grant: () => void }[] = [];

  constructor(readonly size: number) {}

  get inUse(): number {
    return this.used;
  }

  get free(): number {
    return this.size - this.used;
  }

  take(n: number): void {
    this.used += n;
  }

  give(n: number): void {
    this.used = Math.max(0, this.used - n);
    this.grantWaiting();
  }

  /**
   * Takes `n` parts once they fit, after every earlier caller of the same or a lower `rank` (lower
   * ranks first). More than the whole window is granted alone, when nothing else is in flight.
   */
  acquire(n: number, rank = 0): Promise<void> {
    return new Promise((grant) => {
      const at = this.waiting.findIndex((w) => w.rank > rank);
      this.waiting.splice(at === -1 ? this.waiting.length : at, 0, { n, rank, grant });
      this.grantWaiting();
    });
  }

  private grantWaiting(): void {
    for (let next = this.waiting[0]; next; next = this.waiting[0]) {
      const fits = next.n <= this.free || (next.n > this.size && this.used === 0);
      if (!fits) return;
      this.waiting.shift();
      this.used += next.n;
      next.grant();
    }
  }
}
