import { TokenBucket } from "../scheduling/throttle.ts";

/**
 * One token bucket per key (an account, a client address), created full on first use. Buckets
 * that have filled up again hold nothing a new one would not: they are dropped when the map grows,
 * so the memory follows the keys active in the last few seconds or minutes.
 */
export class KeyedBuckets {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(
    readonly ratePerSecond: number,
    readonly capacity: number,
    private readonly maxKeys = 10_000,
  ) {}

  /** Milliseconds until `key` has a whole token; 0 when it has one now. */
  msUntilToken(key: string): number {
    return this.buckets.get(key)?.msUntil(1) ?? 0;
  }

  /** Takes a token if there is one; otherwise takes nothing and says how long to wait. */
  tryTake(key: string): { taken: true } | { taken: false; retryAfterMs: number } {
    const bucket = this.bucket(key);
    const wait = bucket.msUntil(1);
    if (wait > 0) return { taken: false, retryAfterMs: wait };
    bucket.take(1);
    return { taken: true };
  }

  /**
   * Takes a token even when there is none: the bucket goes into debt, and the key waits longer.
   * For events that have happened already (a failed authentication), not for admission.
   */
  charge(key: string): void {
    this.bucket(key).take(1);
  }

  private bucket(key: string): TokenBucket {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= this.maxKeys) this.dropFull();
      bucket = new TokenBucket(this.ratePerSecond, this.capacity);
      this.buckets.set(key, bucket);
    }
    return bucket;
  }

  private dropFull(): void {
    for (const [key, bucket] of this.buckets) {
      if (bucket.available() >= this.capacity) this.buckets.delete(key);
    }
  }
}
