/**
 * Keeps claims alive while their work waits or runs (issue: a claim must survive a replica-set
 * election, about 12 s, plus the driver's server selection, 10 s, and work that waits its turn in
 * this process must not be taken up by another instance meanwhile). Every `leaseMs / 3` it pushes
 * the lease, and the due time that carries it, of every held claim to `leaseMs` from now: one
 * updateMany per claim token, filtered on the owner, so a claim another instance took over is
 * never renewed.
 */
import type { Collection, Filter, UpdateFilter } from "mongodb";
import type { MessageDoc } from "../store/documents.ts";
import { idsIn } from "../store/id-ranges.ts";
import type { ServerClock } from "../store/server-clock.ts";
import type { QueuedDoc, WorkQueue } from "./claims.ts";

/**
 * The claim lease of both queues, delivery and notifications, by default: longer than an election
 * plus server selection, and the same for both, so a dead instance's webhooks come back with its
 * deliveries (issue 25: a 60 s notification lease held the DELIVERED webhooks of a killed
 * instance's messages for a minute after the survivor had delivered them).
 */
export const DEFAULT_LEASE_MS = 30_000;

export interface LeaseKeeperOptions<D extends QueuedDoc = MessageDoc> {
  /** The queue's collection: messages, or inbound messages (their webhooks). */
  messages: Collection<D>;
  queue: Pick<WorkQueue, "due" | "lease">;
  clock: ServerClock;
  leaseMs: number;
  onError?: (error: unknown) => void;
}

export class LeaseKeeper<D extends QueuedDoc = MessageDoc> {
  /** Held message ids by claim token. */
  private readonly held = new Map<string, Set<number>>();
  /**
   * Per claim token: until when (server clock, ms) its lease is known to be held in the database,
   * and the ids a renewal found no longer its own (given back elsewhere, canceled, recorded).
   * `isLive` reads them: work is done under a claim only while it is surely still held.
   */
  private readonly confirmed = new Map<string, { untilMs: number; lost: Set<number> }>();
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;

  constructor(private readonly options: LeaseKeeperOptions<D>) {}

  /**
   * Keeps renewing the claim `token` of message `id` until `release`; `untilMs`, the lease's end
   * as the claim wrote it, lets `isLive` answer for it.
   */
  hold(id: number, token: string, untilMs?: number): void {
    if (untilMs !== undefined && !this.confirmed.has(token)) {
      this.confirmed.set(token, { untilMs, lost: new Set() });
    }
    let ids = this.held.get(token);
    if (!ids) {
      ids = new Set();
      this.held.set(token, ids);
    }
    ids.add(id);
  }

  release(id: number, token: string): void {
    const ids = this.held.get(token);
    if (!ids) return;
    ids.delete(id);
    if (ids.size === 0) {
      this.held.delete(token);
      this.confirmed.delete(token);
    }
  }

  /**
   * Whether the claim `token` surely still holds message `id` for at least `marginMs` more: its
   * lease was last written to end more than `marginMs` from now and no renewal found it gone. A
   * claim held without `untilMs` is taken as live. A cancel (services/cancel.ts) takes a message
   * only once its lease has ended in the database, so work checked here never follows one.
   */
  isLive(token: string, id: number, marginMs: number): boolean {
    const known = this.confirmed.get(token);
    if (!known) return true;
    return !known.lost.has(id) && known.untilMs - this.options.clock.nowMs() > marginMs;
  }

  /** Message ids held now. */
  get size(): number {
    let n = 0;
    for (const ids of this.held.values()) n += ids.size;
    return n;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.renew(), Math.max(50, this.options.leaseMs / 3));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.renewing;
  }

  /** Renews every held claim now. */
  async renew(): Promise<void> {
    if (this.renewing) return this.renewing;
    this.renewing = this.renewHeld().finally(() => {
      this.renewing = undefined;
    });
    return this.renewing;
  }

  private async renewHeld(): Promise<void> {
    const { messages, queue, clock, leaseMs } = this.options;
    const until = new Date(clock.nowMs() + leaseMs);
    await Promise.all(
      [...this.held].map(async ([token, ids]) => {
        if (ids.size === 0) return;
        const asked = [...ids];
        const owned = { [`${queue.lease}.owner`]: token };
        try {
          const { matchedCount } = await messages.updateMany(
            { _id: idsIn(asked), ...owned } as Filter<D>,
            { $set: { [queue.due]: until, [`${queue.lease}.until`]: until } } as UpdateFilter<D>,
          );
          const known = this.confirmed.get(token);
          if (!known) return;
          if (matchedCount < asked.length) {
            // Some are no longer this claim's: which, so that none of them is worked on.
            const still = new Set<number>(
              (
                await messages
                  .find({ _id: idsIn(asked), ...owned } as Filter<D>, { projection: { _id: 1 } })
                  .toArray()
              ).map((d) => d._id as number),
            );
            for (const id of asked) if (!still.has(id)) known.lost.add(id);
          }
          known.untilMs = until.getTime();
        } catch (error) {
          this.options.onError?.(error);
        }
      }),
    );
  }
}
