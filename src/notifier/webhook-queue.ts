/**
 * What the notifier's two kinds of webhooks share (notifier.ts): status notifications
 * (status-notifications.ts) and inbound messages' webhooks (inbound-notifications.ts). Each kind
 * has its own lanes and claims (claiming.ts), leases and buffered writes (outcome-recorder.ts);
 * the loop is the same: claim a round, hold every claimed document until its outcome is recorded,
 * plan each claimed group (send, or record at once: not due, no URL, a refused address), send
 * through the shared dispatcher, count and log, record the outcome, and go on under the same claim
 * where the kind allows it. A kind says only what differs: how claimed documents group, the plan,
 * the request, the outcome of a request, what follows an outcome, and a put-back's outcomes.
 */

import type { Logger } from "../logger.ts";
import type { QueuedDoc } from "../scheduling/claims.ts";
import type { Store } from "../store/database.ts";
import type { NotificationState, WebhookAttemptDoc } from "../store/documents.ts";
import {
  NotificationClaimer,
  type NotificationClaimerOptions,
  type WebhookAccount,
} from "./claiming.ts";
import type { DispatchTask } from "./dispatch.ts";
import type { ResolvedNotifierOptions } from "./options.ts";
import { OutcomeRecorder, type RecordedOutcome } from "./outcome-recorder.ts";
import type { AttemptResult, WebhookSender } from "./sending.ts";

export interface WebhookStats {
  claimed: number;
  delivered: number;
  failedAttempts: number;
  gaveUp: number;
  skipped: number;
  /** Put back unattempted (saturated receiver, stopping, or behind a failed one). */
  deferred: number;
}

/** What the notifier lends a kind: its dispatcher, its claim accounting, its state. */
export interface NotifierHost<T> {
  running(): boolean;
  /** Queues a request in the shared dispatcher. */
  push(task: T): void;
  /** One more claimed document of `accountId` is held until its outcome is recorded. */
  take(accountId: string): void;
  /** Outcomes written: one per account id given. */
  recorded(accountIds: string[]): void;
  /** A written outcome left work due at `at` (a retry): look for due work then. */
  dueAt(at: Date): void;
}

/** What the shared loop reads of an outcome. */
export interface WebhookOutcome extends RecordedOutcome {
  state?: NotificationState;
  url?: string;
  attempt?: WebhookAttemptDoc;
}

/** What the shared loop reads of a request to make. */
export interface WebhookTask extends DispatchTask {
  url: URL;
  /** The URL as the account (or message) has it. */
  callback: string;
  account: WebhookAccount | undefined;
  /** The claim (lease owner) the outcome is recorded under. */
  claim: string;
}

/** Send a request, or record an outcome at once. */
export type WebhookPlan<T, O> = { send: T } | { record: O };

/** A kind's queue: where its documents are and how its outcomes are written. */
export interface WebhookQueueSource<
  M extends { _id: number; accountId: string },
  D extends QueuedDoc,
  O,
> extends Pick<NotificationClaimerOptions<M, D>, "source"> {
  write: (outcomes: O[], now: Date) => Promise<(Date | undefined)[]>;
}

/**
 * One kind of webhooks: `M` a claimed document, `G` what is dispatched together (a document, or
 * a chain of them), `T` a request, `O` an outcome.
 */
export abstract class WebhookQueue<
  M extends { _id: number; accountId: string },
  D extends QueuedDoc,
  G,
  T extends WebhookTask,
  O extends WebhookOutcome,
> {
  protected readonly claimer: NotificationClaimer<M, D>;
  protected readonly recorder: OutcomeRecorder<O>;
  protected readonly store: Store;
  protected readonly logger: Logger;
  protected readonly counters: WebhookStats = {
    claimed: 0,
    delivered: 0,
    failedAttempts: 0,
    gaveUp: 0,
    skipped: 0,
    deferred: 0,
  };

  constructor(
    protected readonly options: ResolvedNotifierOptions,
    protected readonly sender: WebhookSender,
    protected readonly host: NotifierHost<T>,
    queue: WebhookQueueSource<M, D, O>,
    /** The kind in the log's messages: "webhook given up", "inbound webhook refused". */
    private readonly noun: string,
  ) {
    this.store = options.store;
    this.logger = options.logger;
    this.claimer = new NotificationClaimer<M, D>({
      store: options.store,
      ...(queue.source && { source: queue.source }),
      logger: options.logger,
      instanceId: options.instanceId,
      leaseMs: options.leaseMs,
      lanesPerRound: options.lanesPerRound,
      laneParallelism: 8,
    });
    this.recorder = new OutcomeRecorder<O>({
      store: options.store,
      claimer: this.claimer,
      logger: options.logger,
      write: queue.write,
      recorded: (accountIds) => host.recorded(accountIds),
      dueAt: (at) => host.dueAt(at),
    });
  }

  // ---- what a kind says ------------------------------------------------------------------------

  /** The round's documents in the groups dispatched together, in claim order. */
  protected abstract groups(messages: M[]): G[];
  protected abstract accountOf(group: G): string;
  /** Pure: what to do with a claimed group now. */
  protected abstract plan(
    group: G,
    account: WebhookAccount | undefined,
    claim: string,
    now: Date,
  ): WebhookPlan<T, O>;
  /** Makes the request (never throws). */
  protected abstract request(task: T): Promise<AttemptResult>;
  /** What a request (made at `at`) leaves. */
  protected abstract outcome(task: T, result: AttemptResult, at: Date): O;
  protected abstract groupOf(task: T): G;
  /** Records an outcome, and goes on with what may follow it under the same claim. */
  protected abstract follow(outcome: O, group: G, account: WebhookAccount | undefined): void;
  /** The outcomes of a group put back unattempted, due again at `at`. */
  protected abstract putBackOutcomes(group: G, claim: string, at: Date): O[];
  /** The group's ids in the log. */
  protected abstract ids(group: G): Record<string, unknown>;

  /** A request's fields in the log. */
  protected about(task: T): Record<string, unknown> {
    return this.ids(this.groupOf(task));
  }

  // ---- the shared loop ---------------------------------------------------------------------------

  start(): void {
    this.claimer.start();
  }

  /** Once the dispatcher is drained and idle: writes what is left and stops renewing leases. */
  async stop(): Promise<void> {
    await this.recorder.drain();
    await this.claimer.stop();
  }

  stats(): WebhookStats {
    return { ...this.counters };
  }

  /** Whether the account's last claim was dealt between groups of its work (claiming.ts). */
  takesTurns(accountId: string): boolean {
    return this.claimer.takesTurns(accountId);
  }

  /** The overdue sweep of this kind's lanes (see claiming.ts); answers how many were marked. */
  async repairLanes(graceMs: number): Promise<number> {
    const marked = await this.claimer.repairLanes(graceMs);
    await this.claimer.flushMarks(); // marks a failed flush kept
    return marked;
  }

  /**
   * One claim round (see NotificationClaimer.claimRound), every claimed document held, each group
   * dispatched. Answers what it claimed, the lanes served and whether more may be due.
   */
  async claimRound(
    limit: number,
    room: (accountId: string) => number,
    skip: ReadonlySet<string>,
  ): Promise<{ claimed: number; lanes: number; more: boolean }> {
    const round = await this.claimer.claimRound(limit, room, skip);
    this.counters.claimed += round.messages.length;
    for (const message of round.messages) this.host.take(message.accountId);
    for (const group of this.groups(round.messages)) {
      if (round.accounts)
        this.dispatch(group, round.accounts.get(this.accountOf(group)), round.token);
      else this.putBackGroup(group, round.token, this.options.deferMs);
    }
    return { claimed: round.messages.length, lanes: round.lanes, more: round.more };
  }

  /** Sends one webhook and records its outcome; then what follows it. */
  async send(task: T): Promise<void> {
    const at = this.store.clock.now();
    const result = await this.request(task);
    const outcome = this.outcome(task, result, at);
    this.options.metrics.webhooks.attempt(
      outcome.state === "delivered" || outcome.state === "gave_up" ? outcome.state : "retry",
      result.durationMs,
    );
    if (outcome.state === "delivered") {
      this.counters.delivered++;
    } else {
      this.counters.failedAttempts++;
      if (outcome.state === "gave_up") {
        this.counters.gaveUp++;
        this.logger.warn(
          {
            ...this.about(task),
            url: task.callback,
            error: outcome.attempt?.error ?? outcome.attempt?.httpStatus,
          },
          `${this.noun} given up`,
        );
      }
    }
    this.follow(outcome, this.groupOf(task), task.account);
  }

  /** Records a task that will not run here (its receiver busy, or stopping), due in `delayMs`. */
  putBack(task: T, delayMs: number): void {
    this.putBackGroup(this.groupOf(task), task.claim, delayMs);
  }

  /** Queues a claimed group's request, or records at once what needs none. */
  protected dispatch(group: G, account: WebhookAccount | undefined, claim: string): void {
    const plan = this.plan(group, account, claim, this.store.clock.now());
    if ("send" in plan) {
      if (this.host.running()) this.host.push(plan.send);
      else this.putBackGroup(group, claim, 0);
      return;
    }
    const { record } = plan;
    if (record.state === "skipped") this.counters.skipped++;
    if (record.state === "gave_up") {
      this.counters.gaveUp++;
      this.logger.warn(
        { ...this.ids(group), url: record.url, error: record.attempt?.error },
        `${this.noun} refused`,
      );
    }
    this.follow(record, group, account);
  }

  /** Records a claimed group as not attempted, due again in `delayMs`. */
  protected putBackGroup(group: G, claim: string, delayMs: number): void {
    const at = new Date(this.store.clock.nowMs() + Math.max(0, delayMs));
    for (const outcome of this.putBackOutcomes(group, claim, at)) {
      this.counters.deferred++;
      this.recorder.record(outcome, this.accountOf(group));
    }
  }
}
