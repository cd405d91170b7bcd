// A request's deadline, and the options that hold every database call of the request to it.
//
// The settler refunds a pending charge whose messages are not stored once it is older than the
// settle cutoff. That is only right if no write of the request can still land by then: every
// write of a charge is issued with `maxTimeMS` (the server gives up on it past the deadline) and
// an abort signal (the driver stops waiting, and issues nothing more, past the deadline), and the
// cutoff is at least twice the longest deadline
// (docs/decisions.md, "Storage, money and crash safety").

/** Past the deadline: the database did not answer in time; whatever was issued may have landed. */
export class DeadlineExceeded extends Error {
  constructor(message = "the database did not answer in time") {
    super(message);
    this.name = "DeadlineExceeded";
  }
}

export class Deadline {
  private controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  /** `at`: local epoch milliseconds. */
  constructor(private atMs: number) {
    this.arm();
  }

  static in(ms: number): Deadline {
    return new Deadline(Date.now() + ms);
  }

  get at(): number {
    return this.atMs;
  }

  remaining(): number {
    return this.atMs - Date.now();
  }

  get expired(): boolean {
    return this.remaining() <= 0;
  }

  /** Aborted when the deadline passes, with a `DeadlineExceeded` as its reason. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Moves the deadline later (never earlier), e.g. when a batch starts storing its messages. */
  extendTo(atMs: number): void {
    if (atMs <= this.atMs || this.signal.aborted) return;
    this.atMs = atMs;
    this.arm();
  }

  /**
   * Options for one database call: the time left as the server's limit, and the abort signal.
   * Throws when no time is left, so nothing is issued past the deadline.
   */
  options(): { maxTimeMS: number; signal: AbortSignal } {
    const left = Math.floor(this.remaining());
    if (left <= 0 || this.signal.aborted) throw new DeadlineExceeded();
    return { maxTimeMS: left, signal: this.signal };
  }

  /** Stops the timer: the request is over. */
  dispose(): void {
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => this.controller.abort(new DeadlineExceeded()),
      Math.max(0, this.remaining()),
    );
    this.timer.unref();
  }
}

/** How long a write off the request path (lane marks, charge confirmations) may take. */
export const BACKGROUND_WRITE_MS = 10_000;

/**
 * Options for a write off the request path: the server abandons it and the driver stops waiting
 * after BACKGROUND_WRITE_MS. Such writes are chained (the next waits for the one running), so one that is never
 * answered (a connection the database stopped serving without closing it) would otherwise hold
 * every later one, and shutdown, forever.
 */
export function backgroundWriteOptions(): { maxTimeMS: number; signal: AbortSignal } {
  return { maxTimeMS: BACKGROUND_WRITE_MS, signal: AbortSignal.timeout(BACKGROUND_WRITE_MS) };
}
