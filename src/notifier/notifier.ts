/**
 * The webhook dispatcher: status webhooks, and inbound messages' webhooks beside them (design
 * "Status webhooks", "Two-way messaging" and "Scheduling: fair and prioritized").
 *
 * - Due work: a message whose first pending notification is due (`notifyAt`). Only the first
 *   pending notification of a message is ever sent, so notifications go out in order, each after
 *   the previous one succeeded or was given up (outcomes.ts).
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
 * - Recording (outcome-recorder.ts): outcomes are buffered and written with one bulkWrite per flush while the next
 *   requests run; then the lanes of messages left with a `notifyAt` are marked due at that time. A
 *   message whose next status is already in the claimed snapshot goes on under the same claim.
 * - Inbound messages' webhooks (inbound-notifications.ts) are claimed through lanes of their own,
 *   in rounds that take turns with the status rounds, and share the dispatcher (its bounds), the
 *   sender and the claim limits per account. The intake of this process wakes them
 *   (inbound-queue.ts); other instances' are found by the periodic wake-up.
 */

import { WakeSignal } from "../delivery/wake-signal.ts";
import type { Logger } from "../logger.ts";
import { BatchCommits } from "../store/batch-commits.ts";
import type { Store } from "../store/database.ts";
import { headersFor } from "../tracing/tracing.ts";
import { endWebhookSpan, webhookSpan } from "../tracing/work-spans.ts";
import { ChangeWatcher, type ChangeWatcherStats } from "./change-stream.ts";
import { ClaimBudget } from "./claim-budget.ts";
import { NotificationClaimer, type NotifyingMessage, type WebhookAccount } from "./claiming.ts";
import { FairDispatcher } from "./dispatch.ts";
import {
  InboundNotifications,
  type InboundStats,
  type InboundTask,
} from "./inbound-notifications.ts";
import { onInboundQueued } from "./inbound-queue.ts";
import { type NotificationOutcome, recordNotificationOutcomes } from "./notification-records.ts";
import {
  type NotifierOptions,
  type ResolvedNotifierOptions,
  resolveNotifierOptions,
} from "./options.ts";
import { OutcomeRecorder } from "./outcome-recorder.ts";
import {
  attemptOutcome,
  hasNextPending,
  planNotification,
  putBackOutcome,
  type SendTask,
} from "./outcomes.ts";
import { WebhookSender } from "./sending.ts";

export type { NotifierOptions } from "./options.ts";
export { notificationUrl, receiverKey } from "./sending.ts";

export interface NotifierStats extends ChangeWatcherStats {
  delivered: number;
  failedAttempts: number;
  gaveUp: number;
  skipped: number;
  claimed: number;
  /** Notifications put back unattempted (saturated receiver, or stopping). */
  deferred: number;
  /** Claim rounds that took a turn on at least one lane. */
  rounds: number;
  /** Lanes marked due by the overdue sweep. */
  lanesRepaired: number;
  /** Inbound messages' webhooks. */
  inbound: InboundStats;
}

export class Notifier {
  private readonly store: Store;
  private readonly logger: Logger;
  private readonly options: ResolvedNotifierOptions;
  private readonly claimer: NotificationClaimer;
  private readonly dispatcher: FairDispatcher<SendTask | InboundTask>;
  private readonly sender: WebhookSender;
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
  private unlisten: (() => void) | undefined;
  /** Claimed messages here until their outcome is recorded, in all and by account. */
  private readonly budget: ClaimBudget;
  private readonly recorder: OutcomeRecorder<NotificationOutcome>;
  private readonly counters = {
    delivered: 0,
    failedAttempts: 0,
    gaveUp: 0,
    skipped: 0,
    claimed: 0,
    deferred: 0,
    rounds: 0,
    lanesRepaired: 0,
  };

  constructor(options: NotifierOptions) {
    const o = resolveNotifierOptions(options);
    this.options = o;
    this.store = o.store;
    this.logger = o.logger;
    this.budget = new ClaimBudget(o);
    this.claimer = new NotificationClaimer({
      store: o.store,
      commits: new BatchCommits(o.store.batches),
      logger: o.logger,
      instanceId: o.instanceId,
      leaseMs: o.leaseMs,
      lanesPerRound: o.lanesPerRound,
      laneParallelism: 8,
    });
    this.recorder = new OutcomeRecorder<NotificationOutcome>({
      store: o.store,
      claimer: this.claimer,
      logger: o.logger,
      write: (outcomes, now) => recordNotificationOutcomes(o.store.messages, outcomes, now),
      recorded: (accountIds) => {
        for (const accountId of accountIds) this.budget.done(accountId);
        this.wake();
      },
    });
    this.dispatcher = new FairDispatcher<SendTask | InboundTask>(o, {
      run: (task) => ("inbound" in task ? this.inbound.send(task) : this.send(task)),
      putBack: (task) =>
        "inbound" in task
          ? this.inbound.putBack(task, o.deferMs)
          : this.putBack(task.message, task.claim, o.deferMs),
    });
    this.sender = new WebhookSender({ ...o, maxSockets: o.concurrency });
    this.inbound = new InboundNotifications(o, this.sender, {
      running: () => this.running,
      push: (task) => this.dispatcher.push(task),
      take: (accountId) => this.budget.take(accountId),
      recorded: (accountIds) => {
        for (const accountId of accountIds) this.budget.done(accountId);
        this.wakeInbound();
      },
    });
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
    this.claimer.start();
    this.inbound.start();
    this.unlisten = onInboundQueued(this.store.db, () => this.wakeInbound());
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
    this.unlisten?.();
    this.signal.release();
    const watching = this.watcher?.stop();
    await this.loop;
    for (const task of this.dispatcher.drain()) {
      if ("inbound" in task) this.inbound.putBack(task, 0);
      else this.putBack(task.message, task.claim, 0);
    }
    await this.dispatcher.idle();
    await this.recorder.drain();
    await this.inbound.stop();
    await this.claimer.stop();
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
    return { ...this.counters, ...stream, inbound: this.inbound.stats() };
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
    const room = this.budget.round();
    if (!room) return;
    const started = Date.now();
    const round = await this.claimer.claimRound(room.limit, room.room, room.skip);
    if (round.lanes > 0) {
      this.counters.rounds++;
      this.logger.debug(
        {
          lanes: round.lanes,
          claimed: round.messages.length,
          ms: Date.now() - started,
          inFlight: this.budget.held + round.messages.length,
        },
        "notifier: claimed",
      );
    }
    this.counters.claimed += round.messages.length;
    for (const message of round.messages) {
      this.budget.take(message.accountId);
      if (round.accounts)
        this.dispatch(message, round.accounts.get(message.accountId), round.token);
      else this.putBack(message, round.token, this.options.deferMs);
    }
    this.dispatcher.pump();
    if (round.more) this.signal.wake(); // there may be more due
  }

  /** One round of inbound webhooks, dispatched; left due while the pipeline has no room. */
  private async claimInbound(): Promise<void> {
    const room = this.budget.round();
    if (!room) return;
    this.inboundDue = false;
    try {
      const round = await this.inbound.claimRound(room.limit, room.room, room.skip);
      if (round.lanes > 0) this.counters.rounds++;
      this.dispatcher.pump();
      if (round.more) this.wakeInbound();
    } catch (error) {
      this.inboundDue = true;
      throw error;
    }
  }

  private async repairLanes(graceMs: number): Promise<void> {
    try {
      const marked = await this.claimer.repairLanes(graceMs);
      this.counters.lanesRepaired += marked;
      await this.claimer.flushMarks(); // marks a failed flush kept
      if (marked > 0) this.wake();
    } catch (error) {
      this.logger.warn({ err: error }, "notifier: the overdue sweep failed");
    }
    try {
      const marked = await this.inbound.repairLanes(graceMs);
      this.counters.lanesRepaired += marked;
      if (marked > 0) this.wakeInbound();
    } catch (error) {
      this.logger.warn({ err: error }, "notifier: the inbound webhooks' overdue sweep failed");
    }
  }

  // ---- dispatching ------------------------------------------------------------------------------

  /** Queues a claimed message's first pending notification, or records at once what needs no request. */
  private dispatch(message: NotifyingMessage, account: WebhookAccount | undefined, claim: string) {
    const plan = planNotification(
      message,
      account,
      claim,
      this.store.clock.now(),
      this.options.allowPrivate,
    );
    if ("send" in plan) {
      if (this.running) this.dispatcher.push(plan.send);
      else this.putBack(message, claim, 0);
      return;
    }
    if (plan.because === "no-url") {
      this.counters.skipped++;
      if (hasNextPending(message, plan.record.index)) {
        // No URL for the next known status either: skipped under the same claim too.
        this.goOn(plan.record, message, account, claim);
        return;
      }
    }
    if (plan.because === "refused") {
      this.counters.gaveUp++;
      this.logger.warn(
        { messageId: message._id, url: plan.record.url, error: plan.record.attempt?.error },
        "webhook refused",
      );
    }
    this.recorder.record(plan.record, message.accountId);
  }

  /** Sends one notification and records the outcome; a success goes on with the next status. */
  private async send(task: SendTask): Promise<void> {
    const { message, index } = task;
    const at = this.store.clock.now();
    // A span in the message's trace, whose traceparent the request carries (tracing on only).
    const span = webhookSpan(message, task.status);
    const result = await this.sender.attempt(
      task.url,
      `msg_${message._id}_${index}`,
      task.account?.webhookSecret,
      span && headersFor(span),
    );
    if (span) endWebhookSpan(span, result);
    const outcome = attemptOutcome(
      task,
      result,
      at,
      this.options.retrySchedule,
      this.store.clock.now(),
    );
    this.options.metrics.webhooks.attempt(
      outcome.state === "delivered" || outcome.state === "gave_up" ? outcome.state : "retry",
      result.durationMs,
    );
    if (outcome.state === "delivered") {
      this.counters.delivered++;
      if (hasNextPending(message, index)) {
        // The next status of this message is already known: send it under the same claim
        // rather than releasing the message and claiming it again (half the claims, in order).
        this.goOn(outcome, message, task.account, task.claim);
        return;
      }
    } else {
      this.counters.failedAttempts++;
      if (outcome.state === "gave_up") {
        this.counters.gaveUp++;
        this.logger.warn(
          {
            messageId: message._id,
            status: task.status,
            url: task.callback,
            error: outcome.attempt?.error ?? outcome.attempt?.httpStatus,
          },
          "webhook given up",
        );
      }
    }
    this.recorder.record(outcome, message.accountId);
  }

  /** Records a handled notification keeping the claim, and dispatches the message's next one. */
  private goOn(
    outcome: NotificationOutcome,
    message: NotifyingMessage,
    account: WebhookAccount | undefined,
    claim: string,
  ): void {
    outcome.keepLease = true;
    this.recorder.record(outcome, message.accountId);
    const handled = message.notifications[outcome.index];
    if (handled && outcome.state) handled.state = outcome.state;
    this.budget.take(message.accountId);
    this.dispatch(message, account, claim);
  }

  /** Records a claimed message's notification as not attempted, due again in `delayMs`. */
  private putBack(message: NotifyingMessage, claim: string, delayMs: number): void {
    this.counters.deferred++;
    const at = new Date(this.store.clock.nowMs() + delayMs);
    this.recorder.record(putBackOutcome(message, claim, at), message.accountId);
  }
}
