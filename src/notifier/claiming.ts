/**
 * Claiming of due notifications (docs/design.md "Status webhooks" and "Scheduling: fair and prioritized").
 *
 * A message whose first pending notification is due (`notifyAt`) is claimed atomically before it
 * is sent, so only one instance sends it (src/scheduling/claims.ts for the mechanics).
 * Claims are taken by account lane (`FairLanes`, queue "notify"): each round takes turns on the due
 * lanes least recently served first, on every instance alike, splits the round's capacity between
 * them and claims each lane's share, dealt between the account's groups (notify-turns.ts); a lane
 * that gives less than its share is settled (idle, or due when its next work is). An account with
 * 10000 due notifications thus gets no more turns than an account with one, and within an account
 * a batch's notifications get no more turns than a small batch's, a single send's or a retry's.
 *
 * Every claimed message is held by a `LeaseKeeper` until its outcome is recorded, so work that
 * waits its turn in this process, or a slow receiver, never lets the claim run out and another
 * instance send the same notification again. The notifier marks a lane due after every write that
 * leaves its account a `notifyAt` (`mark` + `flushMarks`), and an overdue sweep repairs the lanes
 * a crash left unmarked.
 *
 * The same claimer serves the inbound messages' webhooks (a `NotificationSource` of its own, on
 * the `inbound` lanes; inbound-claims.ts): their documents carry the same `notifyAt` and
 * `notifyLease`.
 */
import type { Collection } from "mongodb";
import type { Logger } from "../logger.ts";
import {
  accountsWithOverdueWork,
  type ClaimOptions,
  claimDue,
  nextDueAt,
  type QueuedDoc,
  type WorkQueue,
} from "../scheduling/claims.ts";
import { FairLanes, LaneMarker, type Turn } from "../scheduling/lanes.ts";
import { LeaseKeeper } from "../scheduling/lease-keeper.ts";
import { BatchCommits } from "../store/batch-commits.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc, LaneQueue, MessageDoc } from "../store/documents.ts";
import { NotifyTurns } from "./notify-turns.ts";

export type NotifyingMessage = Pick<
  MessageDoc,
  | "_id"
  | "accountId"
  | "batchId"
  | "statusCallback"
  | "notifications"
  | "reason"
  | "clientRef"
  | "deliveryClass"
  | "traceContext"
>;

export type WebhookAccount = Pick<
  AccountDoc,
  | "_id"
  | "statusUrl"
  | "webhookSecret"
  | "inboundUrl"
  | "previousWebhookSecret"
  | "webhookSecretRotatedAt"
>;

export type NotificationClaimOptions = ClaimOptions;

/** The notification queue on `messages`: due time, lease, and what makes a message claimable. */
export const NOTIFY_QUEUE: WorkQueue = {
  due: "notifyAt",
  lease: "notifyLease",
  claimable: (now) => ({
    $or: [{ notifyLease: { $exists: false } }, { "notifyLease.until": { $lte: now } }],
  }),
};

/**
 * Claims up to `limit` messages with a due notification (`options.filter`, e.g. one account's);
 * see src/scheduling/claims.ts.
 */
export function claimDueNotifications(
  messages: Collection<MessageDoc>,
  options: NotificationClaimOptions,
): Promise<NotifyingMessage[]> {
  return claimDue<NotifyingMessage>(
    messages,
    NOTIFY_QUEUE,
    {
      _id: 1,
      accountId: 1,
      batchId: 1,
      statusCallback: 1,
      notifications: 1,
      // The webhook's `reason` and `client_ref` parameters.
      reason: 1,
      clientRef: 1,
      deliveryClass: 1,
      traceContext: 1,
    },
    options,
  );
}

/** Status URL, inbound URL and webhook secret of the given accounts, in one query. */
export async function loadWebhookAccounts(
  accounts: Collection<AccountDoc>,
  ids: readonly string[],
): Promise<Map<string, WebhookAccount>> {
  const found = await accounts
    .find(
      { _id: { $in: [...new Set(ids)] } },
      {
        projection: {
          _id: 1,
          statusUrl: 1,
          webhookSecret: 1,
          inboundUrl: 1,
          previousWebhookSecret: 1,
          webhookSecretRotatedAt: 1,
        },
      },
    )
    .toArray();
  return new Map(found.map((a) => [a._id, a]));
}

/** What one lane's claim is given. */
export type LaneClaim = Pick<ClaimOptions, "now" | "limit" | "leaseMs" | "token">;

/** A queue of notifications: where its documents are, its lanes, and a lane's claim. */
export interface NotificationSource<
  T extends { _id: number; accountId: string },
  D extends QueuedDoc,
> {
  /** Its documents carry `notifyAt` and `notifyLease` (NOTIFY_QUEUE's fields). */
  collection: Collection<D>;
  lane: LaneQueue;
  /** Claims up to `options.limit` of the account's due notifications. */
  claim(accountId: string, options: LaneClaim): Promise<T[]>;
  /** Whether the account's last claim was dealt between groups of its work (notify-turns.ts). */
  takesTurns?(accountId: string): boolean;
}

/**
 * The status notifications of messages, on the `notify` lanes; within an account's turn its groups
 * (batches, classes and receivers of single sends, retries) take turns (notify-turns.ts).
 */
export function statusNotifications(
  store: Store,
  commits: BatchCommits,
): NotificationSource<NotifyingMessage, MessageDoc> {
  const turns = new NotifyTurns(store.messages);
  return {
    collection: store.messages,
    lane: "notify",
    claim: (accountId, options) =>
      claimDueNotifications(store.messages, {
        ...options,
        commits,
        filter: { accountId },
        candidates: (read) => turns.candidates(accountId, read),
      }),
    takesTurns: (accountId) => turns.takesTurns(accountId),
  };
}

export interface NotificationClaimerOptions<
  T extends { _id: number; accountId: string } = NotifyingMessage,
  D extends QueuedDoc = MessageDoc,
> {
  store: Store;
  /** The queue served; default the status notifications (with `commits`). */
  source?: NotificationSource<T, D>;
  /** Batch commits, for the status notifications' claims. */
  commits?: BatchCommits;
  logger: Logger;
  instanceId: string;
  leaseMs: number;
  /** Lanes served in one round at most. */
  lanesPerRound: number;
  /** Lanes claimed from at once. */
  laneParallelism: number;
}

export interface ClaimRound<T = NotifyingMessage> {
  /** The claim token (lease owner) of every message of the round. */
  token: string;
  messages: T[];
  /** The webhook settings of the messages' accounts; undefined when they could not be read. */
  accounts: Map<string, WebhookAccount> | undefined;
  /** Lanes served. */
  lanes: number;
  /** More work may be due now: a lane gave its whole share, or every lane asked for was due. */
  more: boolean;
}

/** Fair claims by account lane, the lease renewal of what was claimed, and the lanes' upkeep. */
export class NotificationClaimer<
  T extends { _id: number; accountId: string } = NotifyingMessage,
  D extends QueuedDoc = MessageDoc,
> {
  readonly lanes: FairLanes;
  private readonly source: NotificationSource<T, D>;
  private readonly leases: LeaseKeeper<D>;
  private readonly marker: LaneMarker;
  private seq = 0;

  constructor(private readonly options: NotificationClaimerOptions<T, D>) {
    const { store, logger, leaseMs } = options;
    this.source =
      options.source ??
      (statusNotifications(
        store,
        options.commits ?? new BatchCommits(store.batches),
      ) as unknown as NotificationSource<T, D>);
    this.lanes = new FairLanes(store.lanes, this.source.lane, store.clock);
    this.leases = new LeaseKeeper<D>({
      messages: this.source.collection,
      queue: NOTIFY_QUEUE,
      clock: store.clock,
      leaseMs,
      onError: (error) => logger.warn({ err: error }, "notifier: renewing leases failed"),
    });
    this.marker = new LaneMarker(store.lanes, (error) =>
      logger.warn({ err: error }, "notifier: marking lanes due failed"),
    );
  }

  start(): void {
    this.leases.start();
  }

  async stop(): Promise<void> {
    await this.leases.stop();
    await this.marker.flush();
  }

  /** Messages held (their leases renewed) now. */
  get held(): number {
    return this.leases.size;
  }

  /**
   * One round: turns on up to `limit` due lanes (not those in `skip`), `limit` claims split evenly
   * between them, each lane's share capped by `room(account)`. Claimed messages are held until
   * `release`. A lane whose claim fails is logged and left due; the others' claims stand.
   */
  async claimRound(
    limit: number,
    room: (accountId: string) => number,
    skip: ReadonlySet<string>,
  ): Promise<ClaimRound<T>> {
    const { store, logger } = this.options;
    const token = `${this.options.instanceId}:${++this.seq}`;
    const wanted = Math.min(limit, this.options.lanesPerRound);
    // The turns' stamp and the accounts' webhook settings are written and read beside the claims,
    // not before or after them: two round trips less on every round (a loaded database's round
    // trip is what a webhook that comes due waits for, figure 6c). A failed stamp is logged: the
    // lanes are served a round out of order, nothing is lost.
    const { turns, stamped } = await this.lanes.findTurns(wanted, skip);
    if (turns.length === 0)
      return { token, messages: [], accounts: new Map(), lanes: 0, more: false };
    const stamping = stamped.catch((error: unknown) =>
      logger.warn({ err: error }, "notifier: stamping the lanes served failed"),
    );
    const settings = loadWebhookAccounts(
      store.accounts,
      turns.map((turn) => turn.key),
    ).catch((error: unknown) => {
      logger.error({ err: error }, "notifier: reading the accounts' webhook settings failed");
      return undefined;
    });
    const base = Math.floor(limit / turns.length);
    const extra = limit % turns.length;
    const shares = turns.map((turn, i) =>
      Math.max(0, Math.min(base + (i < extra ? 1 : 0), room(turn.key))),
    );
    let more = turns.length === wanted;
    const messages: T[] = [];
    await inParallel(turns, this.options.laneParallelism, async (turn, i) => {
      const share = shares[i] ?? 0;
      if (share <= 0) return;
      try {
        const claimed = await this.claimLane(turn, share, token);
        for (const message of claimed) this.leases.hold(message._id, token);
        messages.push(...claimed);
        if (claimed.length >= share) more = true;
      } catch (error) {
        logger.error({ err: error, account: turn.key }, "notifier: claiming a lane failed");
      }
    });
    const [accounts] = await Promise.all([settings, stamping]);
    return { token, messages, accounts, lanes: turns.length, more };
  }

  /** Whether the account's last claim was dealt between groups of its work (see the source). */
  takesTurns(accountId: string): boolean {
    return this.source.takesTurns?.(accountId) ?? false;
  }

  /** Stops renewing a message's claim (its outcome is recorded, or its claim is given up). */
  release(id: number, token: string): void {
    this.leases.release(id, token);
  }

  /** Marks the notify lane of `accountId` due at `at`; written by the next `flushMarks`. */
  mark(accountId: string, at: Date): void {
    this.marker.mark(accountId, this.source.lane, at);
  }

  /** Writes the marks made so far (failures are logged, and the marks kept for the next flush). */
  flushMarks(): Promise<void> {
    return this.marker.flush();
  }

  /**
   * Marks due the lanes of accounts with notifications overdue by more than `graceMs`: a crash
   * between writing work and marking its lane leaves it unmarked. Returns how many were marked.
   */
  async repairLanes(graceMs: number): Promise<number> {
    const { store } = this.options;
    const now = store.clock.now();
    const accounts = await accountsWithOverdueWork(
      this.source.collection,
      NOTIFY_QUEUE,
      now,
      graceMs,
    );
    if (accounts.length > 0) await this.lanes.markDue(accounts, now);
    return accounts.length;
  }

  /** Claims up to `share` of the lane's due notifications; settles the lane when it gave less. */
  private async claimLane(turn: Turn, share: number, token: string): Promise<T[]> {
    const { store, leaseMs } = this.options;
    const claimed = await this.source.claim(turn.key, {
      now: store.clock.now(),
      limit: share,
      leaseMs,
      token,
    });
    if (claimed.length < share) {
      try {
        const next = await nextDueAt(this.source.collection, NOTIFY_QUEUE, turn.key);
        await this.lanes.settle(turn, next);
      } catch (error) {
        // The lane stays due: one empty turn more, nothing lost.
        this.options.logger.warn(
          { err: error, account: turn.key },
          "notifier: settling a lane failed",
        );
      }
    }
    return claimed;
  }
}

/** Runs `work` over `items`, at most `parallelism` at a time. */
async function inParallel<T>(
  items: readonly T[],
  parallelism: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      await work(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallelism, items.length) }, worker));
}
