/**
 * How long a bind pauses after the SMSC's throttling answers (ESME_RTHROTTLED, ESME_RMSGQFUL).
 *
 * One pause per episode, not one per answer: with a window of 100, one burst over the SMSC's rate
 * comes back as dozens of throttling answers to parts that were already in flight, and the pause
 * begun at the first of them is already the answer to all of them. Only a throttling answer to a
 * part submitted after the last pause began starts a new pause, each one twice the one before
 * (from `baseMs`, at most `maxMs`); an acceptance of such a part starts the count over.
 * Kannel sleeps a fixed second after ESME_RTHROTTLED, vumi 0.1 s; neither escalates per answer.
 */
export class ThrottleBackoff {
  /** When the last pause began (-Infinity: none yet). */
  private pauseBegan = Number.NEGATIVE_INFINITY;
  private pauseEnds = Number.NEGATIVE_INFINITY;
  private streak = 0;
  /** Pauses begun, and the length of the last one. */
  pauses = 0;
  lastPauseMs = 0;

  constructor(
    private readonly maxMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Pauses in a row without an acceptance since (1: the first of a run). */
  get inARow(): number {
    return this.streak;
  }

  /** Until when (on the `now` clock) the bind takes no part. */
  get pausedUntil(): number {
    return this.pauseEnds;
  }

  /**
   * A throttling answer to a part submitted at `sentAt`: the length of the pause it began, or 0
   * when a pause begun since that part was submitted already answers it.
   */
  throttled(sentAt: number, baseMs: number): number {
    if (sentAt < this.pauseBegan) return 0;
    const length = Math.min(this.maxMs, baseMs * 2 ** this.streak);
    this.streak++;
    this.pauses++;
    this.lastPauseMs = length;
    this.pauseBegan = this.now();
    this.pauseEnds = this.pauseBegan + length;
    return length;
  }

  /** The SMSC accepted a part submitted at `sentAt`: after a pause, the next starts short again. */
  accepted(sentAt: number): void {
    if (sentAt >= this.pauseBegan) this.streak = 0;
  }

  /** A new connection: no pause carried over. */
  reset(): void {
    this.streak = 0;
    this.pauseBegan = Number.NEGATIVE_INFINITY;
    this.pauseEnds = Number.NEGATIVE_INFINITY;
  }
}
