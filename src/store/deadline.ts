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
  /** Made when a caller first asks for the signal: most requests end without anyone listening. */
  private controller: AbortController | undefined;
  private reason: DeadlineExceeded | undefined;
  private listeners: (() => void)[] | undefined;

  /** `at`: local epoch milliseconds. */
  constructor(private atMs: number) {
    DEADLINES.watch(this);
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
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** Calls `listener` once when the deadline passes (never after `dispose`). */
  onExpiry(listener: () => void): void {
    if (this.reason) {
      listener();
      return;
    }
    this.listeners ??= [];
    this.listeners.push(listener);
  }

  /** Moves the deadline later (never earlier), e.g. when a batch starts storing its messages. */
  extendTo(atMs: number): void {
    if (atMs <= this.atMs || this.reason) return;
    this.atMs = atMs;
    DEADLINES.watch(this);
  }

  /**
   * Options for one database call: the time left as the server's limit, and the abort signal.
   * Throws when no time is left, so nothing is issued past the deadline.
   */
  options(): { maxTimeMS: number; signal: AbortSignal } {
    const left = Math.floor(this.remaining());
    if (left <= 0 || this.reason) throw new DeadlineExceeded();
    return { maxTimeMS: left, signal: this.signal };
  }

  /** The request is over: the deadline is no longer watched. */
  dispose(): void {
    DEADLINES.unwatch(this);
    this.listeners = undefined;
  }

  /** Called by the shared timer once the deadline has passed. */
  expire(): void {
    if (this.reason) return;
    this.reason = new DeadlineExceeded();
    this.controller?.abort(this.reason);
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners) for (const listener of listeners) listener();
  }
}

/**
 * One timer for every deadline in the process, armed for the earliest one watched: a request
 * costs a set insertion and removal, not a timer of its own (issue 43). A deadline disposed before
 * its time leaves the timer armed; when it fires, the deadlines past their time expire and the
 * timer is armed for the earliest of the others.
 */
class DeadlineTimer {
  private readonly watched = new Set<Deadline>();
  private timer: NodeJS.Timeout | undefined;
  private armedAt = Number.POSITIVE_INFINITY;

  watch(deadline: Deadline): void {
    this.watched.add(deadline);
    if (deadline.at < this.armedAt) this.arm(deadline.at);
  }

  unwatch(deadline: Deadline): void {
    this.watched.delete(deadline);
    if (this.watched.size === 0 && this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.armedAt = Number.POSITIVE_INFINITY;
    }
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedAt = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedAt = Number.POSITIVE_INFINITY;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    const due: Deadline[] = [];
    for (const deadline of this.watched) {
      if (deadline.at <= now) due.push(deadline);
      else if (deadline.at < next) next = deadline.at;
    }
    for (const deadline of due) this.watched.delete(deadline);
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
    for (const deadline of due) deadline.expire();
  }
}

const DEADLINES = new DeadlineTimer();

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
