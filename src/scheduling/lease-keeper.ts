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
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;

  constructor(private readonly options: LeaseKeeperOptions<D>) {}

  /** Keeps renewing the claim `token` of message `id` until `release`. */
  hold(id: number, token: string): void {
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
    if (ids.size === 0) this.held.delete(token);
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
        try {
          await messages.updateMany(
            { _id: idsIn([...ids]), [`${queue.lease}.owner`]: token } as Filter<D>,
            { $set: { [queue.due]: until, [`${queue.lease}.until`]: until } } as UpdateFilter<D>,
          );
        } catch (error) {
          this.options.onError?.(error);
        }
      }),
    );
  }
}
