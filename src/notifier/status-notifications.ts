/**
 * Status webhooks (docs/design.md "Status webhooks"), sent by the notifier (notifier.ts) through the loop
 * every kind shares (webhook-queue.ts). What is theirs:
 *
 * - Claims: messages whose first pending notification is due, through the `notify` account lanes
 *   (claiming.ts); only the first pending notification of a message is ever sent, so notifications
 *   go out in order, each after the previous one succeeded or was given up (outcomes.ts).
 * - The request: `GET` of the status URL (the message's, else the account's) with the message's
 *   id and status, in a span of the message's trace when tracing is on; `webhook-id`
 *   `msg_<id>_<index>`.
 * - A message whose next status is already in the claimed snapshot goes on under the same claim
 *   once this one is delivered, or skipped for want of a URL.
 */
import type { MessageDoc } from "../store/documents.ts";
import { headersFor } from "../tracing/tracing.ts";
import { endWebhookSpan, webhookSpan } from "../tracing/work-spans.ts";
import type { NotifyingMessage, WebhookAccount } from "./claiming.ts";
import { type NotificationOutcome, recordNotificationOutcomes } from "./notification-records.ts";
import type { ResolvedNotifierOptions } from "./options.ts";
import {
  attemptOutcome,
  hasNextPending,
  planNotification,
  putBackOutcome,
  type SendTask,
} from "./outcomes.ts";
import type { AttemptResult, WebhookSender } from "./sending.ts";
import { signingSecrets } from "./signature.ts";
import { type NotifierHost, WebhookQueue } from "./webhook-queue.ts";

export class StatusNotifications extends WebhookQueue<
  NotifyingMessage,
  MessageDoc,
  NotifyingMessage,
  SendTask,
  NotificationOutcome
> {
  constructor(
    options: ResolvedNotifierOptions,
    sender: WebhookSender,
    host: NotifierHost<SendTask>,
  ) {
    // No source: the claimer's default, the status notifications of `messages`.
    const write = (outcomes: NotificationOutcome[], now: Date) =>
      recordNotificationOutcomes(options.store.messages, outcomes, now);
    super(options, sender, host, { write }, "webhook");
  }

  protected groups(messages: NotifyingMessage[]): NotifyingMessage[] {
    return messages;
  }

  protected accountOf(message: NotifyingMessage): string {
    return message.accountId;
  }

  protected plan(
    message: NotifyingMessage,
    account: WebhookAccount | undefined,
    claim: string,
    now: Date,
  ) {
    return planNotification(message, account, claim, now, this.options.allowPrivate);
  }

  protected async request(task: SendTask): Promise<AttemptResult> {
    // A span in the message's trace, whose traceparent the request carries (tracing on only).
    const span = webhookSpan(task.message, task.status);
    const result = await this.sender.attempt(
      task.url,
      `msg_${task.message._id}_${task.index}`,
      task.account
        ? signingSecrets(task.account, this.options.secretOverlapMs, new Date())
        : undefined,
      span && headersFor(span),
    );
    if (span) endWebhookSpan(span, result);
    return result;
  }

  protected outcome(task: SendTask, result: AttemptResult, at: Date): NotificationOutcome {
    return attemptOutcome(task, result, at, this.options.retrySchedule, this.store.clock.now());
  }

  protected groupOf(task: SendTask): NotifyingMessage {
    return task.message;
  }

  protected follow(
    outcome: NotificationOutcome,
    message: NotifyingMessage,
    account: WebhookAccount | undefined,
  ): void {
    const handled = outcome.state === "delivered" || outcome.state === "skipped";
    if (!handled || !hasNextPending(message, outcome.index)) {
      this.recorder.record(outcome, message.accountId);
      return;
    }
    // The next status of this message is already known: send it (or skip it too) under the same
    // claim rather than releasing the message and claiming it again (half the claims, in order).
    outcome.keepLease = true;
    this.recorder.record(outcome, message.accountId);
    const notification = message.notifications[outcome.index];
    if (notification && outcome.state) notification.state = outcome.state;
    this.host.take(message.accountId);
    this.dispatch(message, account, outcome.claim);
  }

  protected putBackOutcomes(
    message: NotifyingMessage,
    claim: string,
    at: Date,
  ): NotificationOutcome[] {
    return [putBackOutcome(message, claim, at)];
  }

  protected ids(message: NotifyingMessage): Record<string, unknown> {
    return { messageId: message._id };
  }

  protected override about(task: SendTask): Record<string, unknown> {
    return { messageId: task.message._id, status: task.status };
  }
}
