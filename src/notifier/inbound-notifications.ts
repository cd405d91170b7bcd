/**
 * Inbound messages' webhooks (design "Two-way messaging": "Inbound webhook"), sent by the
 * notifier (notifier.ts) beside the status webhooks, through the same fair dispatcher (bounds per
 * receiver, per account and in all), sender, retry schedule and address guard.
 *
 * - The webhook: `POST` to the account's inbound URL of `{id, from, to, text, parts, receivedAt,
 *   optOutType?, incomplete?}` (the REST shape of an inbound message), signed over its body with
 *   the Standard Webhooks headers, `webhook-id` `inbound_<id>`.
 * - Claims: through the `inbound` account lanes (claiming.ts with inbound-claims.ts as its source),
 *   each claimed message leased until its outcome is recorded (inbound-records.ts).
 * - Order per (account, sender): a claim's messages of one sender are a chain, sent one after the
 *   other; the next goes once the previous one is delivered or given up. A failed one, due again
 *   later, takes the rest of its chain back with it.
 */
import type { Logger } from "../logger.ts";
import type { Store } from "../store/database.ts";
import { type InboundMessageDoc, inboundMessagesCollection } from "../store/inbound-messages.ts";
import { checkCallbackUrl } from "./address-guard.ts";
import { NotificationClaimer, type WebhookAccount } from "./claiming.ts";
import type { DispatchTask } from "./dispatch.ts";
import { claimInboundWebhooks, type NotifyingInbound } from "./inbound-claims.ts";
import { type InboundOutcome, recordInboundOutcomes } from "./inbound-records.ts";
import type { ResolvedNotifierOptions } from "./options.ts";
import { OutcomeRecorder } from "./outcome-recorder.ts";
import { afterAttempt, refusedAttempt } from "./outcomes.ts";
import { receiverKey, type WebhookSender } from "./sending.ts";

/** An inbound webhook to send, with the later messages of its sender in the same claim. */
export interface InboundTask extends DispatchTask {
  inbound: NotifyingInbound;
  /** Sent after this one, oldest first, once it is delivered or given up. */
  rest: NotifyingInbound[];
  url: URL;
  /** The inbound URL as the account has it. */
  callback: string;
  account: WebhookAccount;
  body: string;
  claim: string;
}

export interface InboundStats {
  claimed: number;
  delivered: number;
  failedAttempts: number;
  gaveUp: number;
  skipped: number;
  deferred: number;
}

/** What the notifier lends the inbound webhooks: its dispatcher, its accounting, its state. */
export interface NotifierHost {
  running(): boolean;
  /** Queues a request in the shared dispatcher. */
  push(task: InboundTask): void;
  /** One more claimed document of `accountId` is held until its outcome is recorded. */
  take(accountId: string): void;
  /** Outcomes written: one per account id given. */
  recorded(accountIds: string[]): void;
}

/** The webhook's body: the inbound message as REST shows it (rest/inbound.ts). */
export function inboundWebhookBody(message: NotifyingInbound): string {
  return JSON.stringify({
    id: message._id,
    from: message.from,
    to: message.to,
    text: message.text,
    parts: message.parts,
    receivedAt: message.receivedAt.toISOString(),
    ...(message.optOutType && { optOutType: message.optOutType }),
    ...(message.incomplete && { incomplete: true }),
  });
}

/** Stable across retries, so a receiver drops one it handled. */
export function inboundWebhookId(id: number): string {
  return `inbound_${id}`;
}

type Plan = { send: Omit<InboundTask, "rest"> } | { record: InboundOutcome };

/** Pure: send the message's webhook, or record at once (not due yet, no URL, a refused URL). */
export function planInbound(
  message: NotifyingInbound,
  account: WebhookAccount | undefined,
  claim: string,
  now: Date,
  allowPrivate: boolean,
): Plan {
  const base = { messageId: message._id, accountId: message.accountId, from: message.from, claim };
  const ownRetry = message.webhook?.nextAttemptAt;
  if (ownRetry && ownRetry.getTime() > now.getTime())
    return { record: { ...base, state: "pending", nextAttemptAt: ownRetry, deferred: true } };
  const callback = account?.inboundUrl;
  if (!account || !callback) return { record: { ...base, state: "skipped" } };
  let url: URL;
  try {
    url = new URL(callback);
    checkCallbackUrl(url, allowPrivate);
  } catch (error) {
    return {
      record: { ...base, state: "gave_up", url: callback, attempt: refusedAttempt(error, now) },
    };
  }
  return {
    send: {
      accountId: message.accountId,
      receiver: receiverKey(url),
      inbound: message,
      url,
      callback,
      account,
      body: inboundWebhookBody(message),
      claim,
    },
  };
}

export class InboundNotifications {
  private readonly claimer: NotificationClaimer<NotifyingInbound, InboundMessageDoc>;
  private readonly recorder: OutcomeRecorder<InboundOutcome>;
  private readonly store: Store;
  private readonly logger: Logger;
  private readonly counters: InboundStats = {
    claimed: 0,
    delivered: 0,
    failedAttempts: 0,
    gaveUp: 0,
    skipped: 0,
    deferred: 0,
  };

  constructor(
    private readonly options: ResolvedNotifierOptions,
    private readonly sender: WebhookSender,
    private readonly host: NotifierHost,
  ) {
    this.store = options.store;
    this.logger = options.logger;
    const inbound = inboundMessagesCollection(options.store.db);
    this.claimer = new NotificationClaimer<NotifyingInbound, InboundMessageDoc>({
      store: options.store,
      source: {
        collection: inbound,
        lane: "inbound",
        claim: (accountId, claim) =>
          claimInboundWebhooks(inbound, { ...claim, accountId, deferMs: options.deferMs }),
      },
      logger: options.logger,
      instanceId: options.instanceId,
      leaseMs: options.leaseMs,
      lanesPerRound: options.lanesPerRound,
      laneParallelism: 8,
    });
    this.recorder = new OutcomeRecorder<InboundOutcome>({
      store: options.store,
      claimer: this.claimer,
      logger: options.logger,
      write: (outcomes, now) => recordInboundOutcomes(inbound, outcomes, now),
      recorded: (accountIds) => host.recorded(accountIds),
    });
  }

  start(): void {
    this.claimer.start();
  }

  /** Once the dispatcher is drained and idle: writes what is left and stops renewing leases. */
  async stop(): Promise<void> {
    await this.recorder.drain();
    await this.claimer.stop();
  }

  stats(): InboundStats {
    return { ...this.counters };
  }

  /** The overdue sweep of the `inbound` lanes (see claiming.ts); answers how many were marked. */
  async repairLanes(graceMs: number): Promise<number> {
    const marked = await this.claimer.repairLanes(graceMs);
    await this.claimer.flushMarks();
    return marked;
  }

  /**
   * One claim round (see NotificationClaimer.claimRound), its webhooks dispatched by sender
   * chain. Answers what it claimed, the lanes served and whether more may be due.
   */
  async claimRound(
    limit: number,
    room: (accountId: string) => number,
    skip: ReadonlySet<string>,
  ): Promise<{ claimed: number; lanes: number; more: boolean }> {
    const round = await this.claimer.claimRound(limit, room, skip);
    this.counters.claimed += round.messages.length;
    const chains = new Map<string, NotifyingInbound[]>();
    for (const message of round.messages) {
      this.host.take(message.accountId);
      const key = `${message.accountId}\n${message.from}`;
      const chain = chains.get(key);
      if (chain) chain.push(message);
      else chains.set(key, [message]);
    }
    for (const [first, ...rest] of chains.values()) {
      if (!first) continue;
      const account = round.accounts?.get(first.accountId);
      if (round.accounts) this.dispatch(first, rest, account, round.token);
      else this.putBackChain([first, ...rest], round.token, this.options.deferMs);
    }
    return { claimed: round.messages.length, lanes: round.lanes, more: round.more };
  }

  /** Sends one webhook and records its outcome; then the next of its chain, or the chain waits. */
  async send(task: InboundTask): Promise<void> {
    const at = this.store.clock.now();
    const result = await this.sender.attempt(
      task.url,
      inboundWebhookId(task.inbound._id),
      task.account.webhookSecret,
      undefined,
      task.body,
    );
    const after = afterAttempt(
      result,
      at,
      task.inbound.webhook?.attempts.length ?? 0,
      this.options.retrySchedule,
      this.store.clock.now(),
    );
    this.options.metrics.webhooks.attempt(
      after.state === "pending" ? "retry" : after.state,
      result.durationMs,
    );
    const outcome: InboundOutcome = {
      messageId: task.inbound._id,
      accountId: task.accountId,
      from: task.inbound.from,
      claim: task.claim,
      url: task.callback,
      ...after,
    };
    if (after.state === "delivered") this.counters.delivered++;
    else this.counters.failedAttempts++;
    if (after.state === "gave_up") {
      this.counters.gaveUp++;
      this.logger.warn(
        { inboundId: task.inbound._id, url: task.callback, error: after.attempt.error },
        "inbound webhook given up",
      );
    }
    this.record(outcome, task.rest, task.account);
  }

  /** Records a task that will not run here (its receiver busy, or stopping), its chain with it. */
  putBack(task: InboundTask, delayMs: number): void {
    this.putBackChain([task.inbound, ...task.rest], task.claim, delayMs);
  }

  private dispatch(
    message: NotifyingInbound,
    rest: NotifyingInbound[],
    account: WebhookAccount | undefined,
    claim: string,
  ): void {
    const plan = planInbound(
      message,
      account,
      claim,
      this.store.clock.now(),
      this.options.allowPrivate,
    );
    if ("send" in plan) {
      if (this.host.running()) this.host.push({ ...plan.send, rest });
      else this.putBackChain([message, ...rest], claim, 0);
      return;
    }
    const { record } = plan;
    if (record.state === "skipped") this.counters.skipped++;
    if (record.state === "gave_up") {
      this.counters.gaveUp++;
      this.logger.warn(
        { inboundId: message._id, url: record.url, error: record.attempt?.error },
        "inbound webhook refused",
      );
    }
    this.record(record, rest, account);
  }

  /** Records an outcome; a final one lets the chain go on, a pending one takes it back. */
  private record(
    outcome: InboundOutcome,
    rest: NotifyingInbound[],
    account: WebhookAccount | undefined,
  ): void {
    this.recorder.record(outcome, outcome.accountId);
    const [next, ...after] = rest;
    if (!next) return;
    if (outcome.state === "pending") {
      const at = outcome.nextAttemptAt ?? this.store.clock.now();
      this.putBackChain(rest, outcome.claim, at.getTime() - this.store.clock.nowMs());
    } else {
      this.dispatch(next, after, account, outcome.claim);
    }
  }

  /** Records claimed messages as not attempted, due again in `delayMs`. */
  private putBackChain(
    messages: readonly NotifyingInbound[],
    claim: string,
    delayMs: number,
  ): void {
    const at = new Date(this.store.clock.nowMs() + Math.max(0, delayMs));
    for (const message of messages) {
      this.counters.deferred++;
      this.recorder.record(
        {
          messageId: message._id,
          accountId: message.accountId,
          from: message.from,
          claim,
          state: "pending",
          nextAttemptAt: at,
          deferred: true,
        },
        message.accountId,
      );
    }
  }
}
