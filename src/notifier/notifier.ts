/**
 * The webhook dispatcher: status webhooks, and inbound messages' webhooks beside them (design
 * "Status webhooks", "Two-way messaging" and "Scheduling: fair and prioritized").
 *
 * - Two kinds of webhooks, each with lanes, claims and writes of its own and the loop they share
 *   (webhook-queue.ts): status notifications (status-notifications.ts) and inbound messages'
 *   webhooks (inbound-notifications.ts). Their rounds take turns while both have work; they share
 *   the dispatcher (its bounds), the sender and the claim limits per account. The intake of this
 *   process wakes the inbound webhooks (inbound-queue.ts); other instances' are found by the
 *   periodic wake-up.
 * - Claims (claiming.ts): by account lane, in rounds that share the free capacity between the due
 *   lanes least recently served, on every instance alike; every claimed message's lease is renewed
 *   until its outcome is recorded. An account whose claimed, unfinished notifications reach
 *   `accountClaimLimit` in this instance is not claimed for. A periodic sweep marks the lanes of
 *   accounts with overdue work (what a crash left unmarked).
 * - Sending (dispatch.ts, sending.ts): requests in flight bounded globally, per receiver (scheme,
 *   host, port and path) and per account, slots shared round robin between accounts and their
 *   receivers; work for a saturated receiver waits here for a bounded time and count, then goes
 *   back to the database for a moment.
 * - Wake-ups (change-stream.ts): a change stream on `messages`, with its resume token stored, and a
 *   periodic wake-up for retries and lanes that come due later.
 * - Recording (outcome-recorder.ts): outcomes are buffered and written with one bulkWrite per
 *   flush while the next requests run; then the lanes of documents left with a `notifyAt` are
 *   marked due at that time.
 */

import type { Logger } from "../logger.ts";
import { WakeSignal } from "../scheduling/wake-signal.ts";
import type { Store } from "../store/database.ts";
import { ChangeWatcher, type ChangeWatcherStats } from "./change-stream.ts";
import { ClaimBudget } from "./claim-budget.ts";
import { FairDispatcher } from "./dispatch.ts";
import { InboundNotifications, type InboundTask } from "./inbound-notifications.ts";
import {
  type NotifierOptions,
  type ResolvedNotifierOptions,
  resolveNotifierOptions,
} from "./options.ts";
import type { SendTask } from "./outcomes.ts";
import { WebhookSender } from "./sending.ts";
import { StatusNotifications } from "./status-notifications.ts";
import type { NotifierHost, WebhookStats } from "./webhook-queue.ts";

export type { NotifierOptions } from "./options.ts";
export { notificationUrl, receiverKey } from "./sending.ts";

/** The status notifications' counts, the claim rounds and sweeps of both kinds, the stream's. */
export interface NotifierStats extends ChangeWatcherStats, WebhookStats {
  /** Claim rounds that took a turn on at least one lane. */
  rounds: number;
  /** Lanes marked due by the overdue sweep. */
  lanesRepaired: number;
  /** Inbound messages' webhooks. */
  inbound: WebhookStats;
}

export class Notifier {
  private readonly store: Store;
  private readonly logger: Logger;
  private readonly options: ResolvedNotifierOptions;
  private readonly dispatcher: FairDispatcher<SendTask | InboundTask>;
  private readonly sender: WebhookSender;
  private readonly status: StatusNotifications;
  private readonly inbound: InboundNotifications;
  /** Inbound webhooks may be due: look in their lanes in the next rounds. */
  private inboundDue = true;
  /** Which kind claims first in a loop turn: they alternate while both have work. */
  private inboundFirst = false;
  private readonly watcher: ChangeWatcher | undefined;

  private running = false;
  private loop: Promise<void> | undefined;
  private readonly signal = new WakeSignal();
  private timers: NodeJS.Timeout[] = [];
  /** Per kind's wake-up: the timer for the earliest retry time asked (see `alarm`). */
  private readonly alarms = new Map<() => void, { atMs: number; timer: NodeJS.Timeout }>();
  /** Claimed messages here until their outcome is recorded, in all and by account. */
  private readonly budget: ClaimBudget;
  private readonly counters = { rounds: 0, lanesRepaired: 0 };

  constructor(options: NotifierOptions) {
    const o = resolveNotifierOptions(options);
    this.options = o;
    this.store = o.store;
    this.logger = o.logger;
    this.budget = new ClaimBudget(o);
    this.dispatcher = new FairDispatcher<SendTask | InboundTask>(o, {
      run: (task) => ("inbound" in task ? this.inbound.send(task) : this.status.send(task)),
      putBack: (task) =>
        "inbound" in task
          ? this.inbound.putBack(task, o.deferMs)
          : this.status.putBack(task, o.deferMs),
    });
    this.sender = new WebhookSender({ ...o, maxSockets: o.concurrency });
    this.status = new StatusNotifications(
      o,
      this.sender,
      this.host(() => this.wake()),
    );
    this.inbound = new InboundNotifications(
      o,
      this.sender,
      this.host(() => this.wakeInbound()),
    );
    if (o.watch) {
      this.watcher = new ChangeWatcher({
        store: o.store,
        logger: o.logger,
        tokenKey: o.resumeTokenKey,
        idleMs: o.streamIdleMs,
        retryMs: Math.min(1000, o.sweepIntervalMs),
        onChange: () => this.wake(),
        onEvent: (writtenAt) => o.metrics.changeStream.event(writtenAt, o.store.clock.nowMs()),
      });
    }
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.watcher?.start();
    this.status.start();
    this.inbound.start();
    const every = (ms: number, tick: () => void) => {
      const timer = setInterval(tick, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(this.options.sweepIntervalMs, () => {
      this.wakeInbound();
      void this.watcher?.persistToken();
      this.dispatcher.expire();
      this.dispatcher.pump();
    });
    every(this.options.overdueSweepMs, () => void this.repairLanes(this.options.overdueGraceMs));
    this.signal.wake();
    this.loop = this.run();
    this.logger.info({ instanceId: this.options.instanceId }, "notifier started");
  }

  /**
   * Stops claiming; puts back the work waiting here, finishes and records the requests in flight,
   * closes the stream and stores its token.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    for (const { timer } of this.alarms.values()) clearTimeout(timer);
    this.alarms.clear();
    this.signal.release();
    const watching = this.watcher?.stop();
    await this.loop;
    for (const task of this.dispatcher.drain()) {
      if ("inbound" in task) this.inbound.putBack(task, 0);
      else this.status.putBack(task, 0);
    }
    await this.dispatcher.idle();
    await this.status.stop();
    await this.inbound.stop();
    await watching;
    this.sender.destroy();
    this.logger.info({ instanceId: this.options.instanceId, ...this.stats() }, "notifier stopped");
  }

  /** Looks for due notifications now. */
  wake(): void {
    this.signal.wake();
  }

  /** Looks for due inbound webhooks now (and status notifications). */
  wakeInbound(): void {
    this.inboundDue = true;
    this.signal.wake();
  }

  stats(): NotifierStats {
    const stream = this.watcher?.stats() ?? {
      streamEvents: 0,
      streamOpens: 0,
      resumedFromToken: false,
    };
    return {
      ...this.status.stats(),
      ...this.counters,
      ...stream,
      inbound: this.inbound.stats(),
    };
  }

  // ---- claiming ---------------------------------------------------------------------------------

  private async run(): Promise<void> {
    // Lanes a crash (or a producer that does not mark them) left unmarked: whatever is due now.
    await this.repairLanes(0);
    while (this.running) {
      if (!(await this.signal.next())) continue;
      // While inbound webhooks may be due, their rounds and status rounds take turns going first.
      const inboundFirst = this.inboundDue && this.inboundFirst;
      if (this.inboundDue) this.inboundFirst = !this.inboundFirst;
      try {
        if (inboundFirst) await this.claimInbound();
        await this.claimStatus();
        if (!inboundFirst && this.inboundDue) await this.claimInbound();
      } catch (error) {
        this.logger.error({ err: error }, "notifier: claiming failed");
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(1000, this.options.sweepIntervalMs)),
        );
        this.signal.wake();
      }
    }
  }

  /** One round of status notifications, dispatched. */
  private async claimStatus(): Promise<void> {
    if (await this.claimRound(this.status)) this.wake(); // there may be more due
  }

  /** One round of inbound webhooks, dispatched; left due while the pipeline has no room. */
  private async claimInbound(): Promise<void> {
    this.inboundDue = false;
    try {
      const more = await this.claimRound(this.inbound);
      if (more === undefined) this.inboundDue = true;
      else if (more) this.wakeInbound();
    } catch (error) {
      this.inboundDue = true;
      throw error;
    }
  }

  /** One round of a kind, dispatched: whether more may be due; undefined when there was no room. */
  private async claimRound(
    kind: StatusNotifications | InboundNotifications,
  ): Promise<boolean | undefined> {
    const room = this.budget.round((accountId) => kind.takesTurns(accountId));
    if (!room) return undefined;
    const started = Date.now();
    const round = await kind.claimRound(room.limit, room.room, room.skip);
    if (round.lanes > 0) {
      this.counters.rounds++;
      this.logger.debug(
        {
          inbound: kind === this.inbound,
          lanes: round.lanes,
          claimed: round.claimed,
          ms: Date.now() - started,
          inFlight: this.budget.held,
        },
        "notifier: claimed",
      );
    }
    this.dispatcher.pump();
    return round.more;
  }

  private async repairLanes(graceMs: number): Promise<void> {
    await this.repairLanesOf(this.status, graceMs, () => this.wake(), "the overdue sweep");
    await this.repairLanesOf(
      this.inbound,
      graceMs,
      () => this.wakeInbound(),
      "the inbound webhooks' overdue sweep",
    );
  }

  private async repairLanesOf(
    kind: StatusNotifications | InboundNotifications,
    graceMs: number,
    wake: () => void,
    sweep: string,
  ): Promise<void> {
    try {
      const marked = await kind.repairLanes(graceMs);
      this.counters.lanesRepaired += marked;
      if (marked > 0) wake();
    } catch (error) {
      this.logger.warn({ err: error }, `notifier: ${sweep} failed`);
    }
  }

  /** What the notifier lends a kind: its dispatcher and claim budget; `wake` once outcomes are written. */
  private host<T extends SendTask | InboundTask>(wake: () => void): NotifierHost<T> {
    return {
      running: () => this.running,
      push: (task) => this.dispatcher.push(task),
      take: (accountId) => this.budget.take(accountId),
      recorded: (accountIds) => {
        for (const accountId of accountIds) this.budget.done(accountId);
        wake();
      },
      dueAt: (at) => this.alarm(at.getTime(), wake),
    };
  }

  /**
   * Wakes `wake` at `atMs` (server time): a retry goes out at its time, not at the next periodic
   * wake-up (up to `sweepIntervalMs` later). One timer per kind, for the earliest time asked.
   */
  private alarm(atMs: number, wake: () => void): void {
    const current = this.alarms.get(wake);
    if (!this.running || (current && current.atMs <= atMs)) return;
    if (current) clearTimeout(current.timer);
    const timer = setTimeout(
      () => {
        this.alarms.delete(wake);
        wake();
      },
      Math.max(0, atMs - this.store.clock.nowMs()),
    );
    timer.unref();
    this.alarms.set(wake, { atMs, timer });
  }
}
