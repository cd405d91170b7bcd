/**
 * What the SMSC sends this service (receipts, mobile-originated messages), held until it is stored
 * (docs/design.md "Carrier: SMPP 3.4" and "Two-way messaging": the `deliver_sm_resp` is sent only once what
 * it answers is stored, so the SMSC keeps and sends again anything this process did not store,
 * e.g. after a crash).
 *
 * - Items are handed to the handler in batches (an item waits `collectMs` for others to join it),
 *   one call at a time; each is answered (on the connection it came on) once the handler resolved
 *   without listing it under `retry`, with the status the handler gave it (ESME_ROK by default).
 * - An item the handler lists under `retry` cannot be stored yet (a receipt that overtook the
 *   recording of its submission). It is offered again after 100 ms doubling to 2 s, unanswered,
 *   for `holdRetryMs`; then it is answered, logged and dropped.
 * - A handler that fails (the database is down): with `failureStatus`, every item of the call is
 *   answered with it (MO: ESME_RX_T_APPN, the SMSC delivers again later); without, the items are
 *   offered again 1 s later, never answered before they are stored (receipts).
 * - The SMSC may send an item again while it is held (same `key`): both are answered together.
 */

import type { Logger } from "../logger.ts";
import { ESME_ROK } from "./command-status.ts";

/** Sends the response of one received PDU with `status`; false when its connection is gone. */
export type Acknowledge = (status?: number) => boolean;

/** The handler's answer: keys to offer again, and a status other than ESME_ROK for some keys. */
export interface HeldAnswers {
  retry?: Iterable<string>;
  status?: ReadonlyMap<string, number>;
}

export type HeldHandler<T> = (items: T[]) => Promise<HeldAnswers>;

interface Held<T> {
  item: T;
  acks: Acknowledge[];
  firstAt: number;
  /** When it is offered (again); infinite while it is being offered. */
  dueAt: number;
  offers: number;
}

export interface HeldInboxOptions<T> {
  /** What is held, for logs: "receipt", "mobile-originated message". */
  what: string;
  logger: Logger;
  key(item: T): string;
  /** How long an item the handler asks to retry is held before it is answered and dropped. */
  holdRetryMs: number;
  /** What a retry means, for the log of the dropped, e.g. "for unknown message ids". */
  retryMeans?: string | undefined;
  /** Items per handler call at most. */
  batchSize: number;
  /**
   * How long an item waits for others to join its batch (fewer, larger database writes when items
   * stream in one PDU at a time). Default 0.
   */
  collectMs?: number | undefined;
  /** A failed handler call answers its items with this; undefined: offered again, unanswered. */
  failureStatus?: number | undefined;
}

export class HeldInbox<T> {
  private handler: HeldHandler<T> | undefined;
  private readonly held = new Map<string, Held<T>>();
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private running = false;
  private readonly counts = { stored: 0, dropped: 0, failed: 0 };

  constructor(private readonly options: HeldInboxOptions<T>) {}

  start(handler: HeldHandler<T>): void {
    this.handler = handler;
    this.running = true;
    this.schedule(0);
  }

  /** Stops offering; waits for the handler call in flight. What is held stays unanswered. */
  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    while (this.flushing) await this.flushing;
  }

  /** Holds an item until it is stored; `ack` answers its PDU. */
  add(item: T, ack: Acknowledge): void {
    const key = this.options.key(item);
    const known = this.held.get(key);
    if (known) {
      known.acks.push(ack);
      return;
    }
    const now = performance.now();
    const collect = this.options.collectMs ?? 0;
    this.held.set(key, { item, acks: [ack], firstAt: now, dueAt: now + collect, offers: 0 });
    this.schedule(collect);
  }

  /** Items held (received and not yet answered). */
  get size(): number {
    return this.held.size;
  }

  stats(): { held: number; stored: number; dropped: number; failed: number } {
    return { held: this.held.size, ...this.counts };
  }

  private schedule(delayMs: number): void {
    if (!this.running) return;
    const at = performance.now() + delayMs;
    if (at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.flush();
    }, delayMs);
    this.timer.unref();
  }

  private flush(): void {
    if (this.flushing || !this.running) return;
    const run = async () => {
      for (;;) {
        const due = this.due();
        if (due.length === 0 || !this.running) return;
        await this.offer(due);
      }
    };
    // Cleared in a later tick than this assignment, even when there is nothing to offer.
    this.flushing = run()
      .catch((error: unknown) =>
        this.options.logger.error({ err: error }, `smpp: ${this.options.what} inbox`),
      )
      .finally(() => {
        this.flushing = undefined;
        this.scheduleNext();
      });
  }

  private due(): Held<T>[] {
    const now = performance.now();
    const due: Held<T>[] = [];
    for (const entry of this.held.values()) {
      if (entry.dueAt <= now) due.push(entry);
      if (due.length >= this.options.batchSize) break;
    }
    return due;
  }

  private scheduleNext(): void {
    let next = Number.POSITIVE_INFINITY;
    for (const entry of this.held.values()) next = Math.min(next, entry.dueAt);
    if (next < Number.POSITIVE_INFINITY) this.schedule(Math.max(0, next - performance.now()));
  }

  private async offer(entries: Held<T>[]): Promise<void> {
    const handler = this.handler;
    if (!handler) return;
    for (const entry of entries) {
      entry.offers++;
      entry.dueAt = Number.POSITIVE_INFINITY;
    }
    let answers: HeldAnswers;
    try {
      answers = await handler(entries.map((e) => e.item));
    } catch (error) {
      this.failed(entries, error);
      return;
    }
    const retry = new Set(answers.retry ?? []);
    const now = performance.now();
    const dropped: string[] = [];
    for (const entry of entries) {
      const key = this.options.key(entry.item);
      if (retry.has(key) && now - entry.firstAt < this.options.holdRetryMs) {
        entry.dueAt = now + Math.min(2_000, 100 * 2 ** (entry.offers - 1));
        continue;
      }
      if (retry.has(key)) {
        dropped.push(key);
        this.counts.dropped++;
      } else this.counts.stored++;
      this.held.delete(key);
      const status = answers.status?.get(key) ?? ESME_ROK;
      for (const ack of entry.acks) ack(status);
    }
    if (dropped.length > 0) {
      this.options.logger.warn(
        { count: dropped.length, keys: dropped.slice(0, 20), heldMs: this.options.holdRetryMs },
        `smpp: ${this.options.what}s ${this.options.retryMeans ?? "that could not be stored"} acknowledged and dropped`,
      );
    }
  }

  private failed(entries: Held<T>[], error: unknown): void {
    const status = this.options.failureStatus;
    this.options.logger.warn(
      { err: error, count: entries.length, status },
      status === undefined
        ? `smpp: storing ${this.options.what}s failed; offered again, not acknowledged`
        : `smpp: storing ${this.options.what}s failed; answered with a temporary error`,
    );
    if (status === undefined) {
      const again = performance.now() + 1_000;
      for (const entry of entries) entry.dueAt = again;
      return;
    }
    this.counts.failed += entries.length;
    for (const entry of entries) {
      this.held.delete(this.options.key(entry.item));
      for (const ack of entry.acks) ack(status);
    }
  }
}
