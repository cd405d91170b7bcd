/**
 * Inbound messages' webhooks (docs/design.md "Two-way messaging": "Inbound webhook"), sent by the
 * notifier (notifier.ts) beside the status webhooks, through the loop every kind shares
 * (webhook-queue.ts): the same fair dispatcher (bounds per receiver, per account and in all),
 * sender, retry schedule and address guard.
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
import { type InboundMessageDoc, inboundMessagesCollection } from "../store/inbound-messages.ts";
import { checkCallbackUrl } from "./address-guard.ts";
import type { LaneClaim, WebhookAccount } from "./claiming.ts";
import { claimInboundWebhooks, type NotifyingInbound } from "./inbound-claims.ts";
import { type InboundOutcome, recordInboundOutcomes } from "./inbound-records.ts";
import type { ResolvedNotifierOptions } from "./options.ts";
import { afterAttempt, refusedAttempt } from "./outcomes.ts";
import { type AttemptResult, receiverKey, type WebhookSender } from "./sending.ts";
import { signingSecrets } from "./signature.ts";
import {
  type NotifierHost,
  type WebhookPlan,
  WebhookQueue,
  type WebhookTask,
} from "./webhook-queue.ts";

/** An inbound webhook to send, with the later messages of its sender in the same claim. */
export interface InboundTask extends WebhookTask {
  inbound: NotifyingInbound;
  /** Sent after this one, oldest first, once it is delivered or given up. */
  rest: NotifyingInbound[];
  account: WebhookAccount;
  body: string;
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

/** A claim's messages of one sender, oldest first: sent one after the other. */
type Chain = [NotifyingInbound, ...NotifyingInbound[]];

export class InboundNotifications extends WebhookQueue<
  NotifyingInbound,
  InboundMessageDoc,
  Chain,
  InboundTask,
  InboundOutcome
> {
  constructor(
    options: ResolvedNotifierOptions,
    sender: WebhookSender,
    host: NotifierHost<InboundTask>,
  ) {
    const inbound = inboundMessagesCollection(options.store.db);
    const source = {
      collection: inbound,
      lane: "inbound" as const,
      claim: (accountId: string, claim: LaneClaim) =>
        claimInboundWebhooks(inbound, { ...claim, accountId, deferMs: options.deferMs }),
    };
    const write = (outcomes: InboundOutcome[], now: Date) =>
      recordInboundOutcomes(inbound, outcomes, now);
    super(options, sender, host, { source, write }, "inbound webhook");
  }

  /** Chains by (account, sender). */
  protected groups(messages: NotifyingInbound[]): Chain[] {
    const chains = new Map<string, Chain>();
    for (const message of messages) {
      const key = `${message.accountId}\n${message.from}`;
      const chain = chains.get(key);
      if (chain) chain.push(message);
      else chains.set(key, [message]);
    }
    return [...chains.values()];
  }

  protected accountOf([first]: Chain): string {
    return first.accountId;
  }

  protected plan(
    [first, ...rest]: Chain,
    account: WebhookAccount | undefined,
    claim: string,
    now: Date,
  ): WebhookPlan<InboundTask, InboundOutcome> {
    const plan = planInbound(first, account, claim, now, this.options.allowPrivate);
    return "send" in plan ? { send: { ...plan.send, rest } } : plan;
  }

  protected request(task: InboundTask): Promise<AttemptResult> {
    return this.sender.attempt(
      task.url,
      inboundWebhookId(task.inbound._id),
      signingSecrets(task.account, this.options.secretOverlapMs, new Date()),
      undefined,
      task.body,
    );
  }

  protected outcome(task: InboundTask, result: AttemptResult, at: Date): InboundOutcome {
    const after = afterAttempt(
      result,
      at,
      task.inbound.webhook?.attempts.length ?? 0,
      this.options.retrySchedule,
      this.store.clock.now(),
    );
    return {
      messageId: task.inbound._id,
      accountId: task.accountId,
      from: task.inbound.from,
      claim: task.claim,
      url: task.callback,
      ...after,
    };
  }

  protected groupOf(task: InboundTask): Chain {
    return [task.inbound, ...task.rest];
  }

  /** Records an outcome; a final one lets the chain go on, a pending one takes it back. */
  protected follow(
    outcome: InboundOutcome,
    [, ...rest]: Chain,
    account: WebhookAccount | undefined,
  ): void {
    this.recorder.record(outcome, outcome.accountId);
    const [next, ...after] = rest;
    if (!next) return;
    if (outcome.state === "pending") {
      const at = outcome.nextAttemptAt ?? this.store.clock.now();
      this.putBackGroup([next, ...after], outcome.claim, at.getTime() - this.store.clock.nowMs());
    } else {
      this.dispatch([next, ...after], account, outcome.claim);
    }
  }

  protected putBackOutcomes(chain: Chain, claim: string, at: Date): InboundOutcome[] {
    return chain.map((message) => ({
      messageId: message._id,
      accountId: message.accountId,
      from: message.from,
      claim,
      state: "pending",
      nextAttemptAt: at,
      deferred: true,
    }));
  }

  protected ids([first]: Chain): Record<string, unknown> {
    return { inboundId: first._id };
  }
}
