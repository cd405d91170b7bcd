/**
 * Receipts received over SMPP, held until they are stored (design "Carrier: SMPP 3.4": the
 * `deliver_sm_resp` is sent only once the receipt is stored, so the SMSC keeps and sends again
 * any receipt this process did not store, e.g. after a crash).
 *
 * - Receipts are handed to the worker's handler in batches (a receipt waits `collectMs` for others
 *   to join it), one call at a time; each is answered
 *   (`deliver_sm_resp`, on the connection it came on) once the handler resolved without listing it
 *   under `retry`.
 * - A receipt the handler lists under `retry` has no recorded submission yet: it overtook the
 *   recording of its `submit_sm_resp`, or its id is unknown (a part submitted by an instance that
 *   crashed before recording it, or whose `submit_sm_resp` was lost). It is offered again after
 *   100 ms doubling to 2 s, unanswered, for `holdUnknownMs`; then it is answered, logged and
 *   dropped.
 * - A handler that fails (the database is down) gets the receipts again 1 s later; they are never
 *   answered before they are stored.
 * - The SMSC may send a receipt again while it is held (the test SMSC does after 3 s without an
 *   answer): both deliver_sm are answered when it is stored.
 */

import type { Logger } from "../../logger.ts";
import type { CarrierReceipt, ReceiptHandler } from "../carrier.ts";

/** Sends the deliver_sm_resp of one received deliver_sm; false when its connection is gone. */
export type Acknowledge = () => boolean;

interface Held {
  receipt: CarrierReceipt;
  acks: Acknowledge[];
  firstAt: number;
  /** When it is offered (again); infinite while it is being offered. */
  dueAt: number;
  offers: number;
}

export interface ReceiptInboxOptions {
  logger: Logger;
  /** How long a receipt the handler cannot match is held before it is answered and dropped. */
  holdUnknownMs: number;
  /** Receipts per handler call at most. */
  batchSize: number;
  /**
   * How long a receipt waits for others to join its batch (fewer, larger database writes when
   * receipts stream in one deliver_sm at a time). Default 0.
   */
  collectMs?: number;
}

export class ReceiptInbox {
  private handler: ReceiptHandler | undefined;
  private readonly held = new Map<string, Held>();
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  private running = false;
  private readonly counts = { stored: 0, dropped: 0 };

  constructor(private readonly options: ReceiptInboxOptions) {}

  start(handler: ReceiptHandler): void {
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

  /** Holds a receipt until it is stored; `ack` answers its deliver_sm. */
  add(receipt: CarrierReceipt, ack: Acknowledge): void {
    const known = this.held.get(receipt.carrierId);
    if (known) {
      known.acks.push(ack);
      return;
    }
    const now = performance.now();
    const collect = this.options.collectMs ?? 0;
    this.held.set(receipt.carrierId, {
      receipt,
      acks: [ack],
      firstAt: now,
      dueAt: now + collect,
      offers: 0,
    });
    this.schedule(collect);
  }

  /** Receipts held (received and not yet answered). */
  get size(): number {
    return this.held.size;
  }

  stats(): { held: number; stored: number; dropped: number } {
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
      .catch((error: unknown) => this.options.logger.error({ err: error }, "smpp: receipt inbox"))
      .finally(() => {
        this.flushing = undefined;
        this.scheduleNext();
      });
  }

  private due(): Held[] {
    const now = performance.now();
    const due: Held[] = [];
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

  private async offer(entries: Held[]): Promise<void> {
    const handler = this.handler;
    if (!handler) return;
    for (const entry of entries) {
      entry.offers++;
      entry.dueAt = Number.POSITIVE_INFINITY;
    }
    let retry: Set<string>;
    try {
      retry = new Set((await handler(entries.map((e) => e.receipt))).retry ?? []);
    } catch (error) {
      this.options.logger.warn(
        { err: error, count: entries.length },
        "smpp: storing receipts failed; offered again, not acknowledged",
      );
      const again = performance.now() + 1_000;
      for (const entry of entries) entry.dueAt = again;
      return;
    }
    const now = performance.now();
    const dropped: string[] = [];
    for (const entry of entries) {
      const id = entry.receipt.carrierId;
      if (retry.has(id) && now - entry.firstAt < this.options.holdUnknownMs) {
        entry.dueAt = now + Math.min(2_000, 100 * 2 ** (entry.offers - 1));
        continue;
      }
      if (retry.has(id)) {
        dropped.push(id);
        this.counts.dropped++;
      } else this.counts.stored++;
      this.held.delete(id);
      for (const ack of entry.acks) ack();
    }
    if (dropped.length > 0) {
      this.options.logger.warn(
        {
          count: dropped.length,
          carrierIds: dropped.slice(0, 20),
          heldMs: this.options.holdUnknownMs,
        },
        "smpp: receipts for unknown message ids acknowledged and dropped",
      );
    }
  }
}
