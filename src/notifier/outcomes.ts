/**
 * What becomes of a claimed message's first pending notification (docs/design.md "Status webhooks"): sent
 * (any 2xx is delivered; anything else is retried on the schedule, then given up), skipped when
 * there is no status URL, given up at once for a refused (private) address or an unusable URL, left
 * for later when its retry is not due yet, or put back unattempted. Pure: the notifier counts, logs,
 * sends and records.
 */
import type { StatusName } from "../domain/message-status.ts";
import { notifyGroupOf } from "../domain/notify-groups.ts";
import type { WebhookAttemptDoc } from "../store/documents.ts";
import { checkCallbackUrl } from "./address-guard.ts";
import type { NotifyingMessage, WebhookAccount } from "./claiming.ts";
import type { DispatchTask } from "./dispatch.ts";
import type { NotificationOutcome } from "./notification-records.ts";
import { retryDelayMs } from "./retry-schedule.ts";
import { type AttemptResult, describe, notificationUrl, receiverKey } from "./sending.ts";

const FINAL_STATUSES: ReadonlySet<StatusName> = new Set([
  "DELIVERED",
  "SEND_ERROR",
  "DELIVERY_ERROR",
  "CANCELED",
]);

/** A notification to send, under the claim it was taken with. */
export interface SendTask extends DispatchTask {
  url: URL;
  message: NotifyingMessage;
  index: number;
  status: StatusName;
  attemptsBefore: number;
  callback: string;
  account: WebhookAccount | undefined;
  /** The claim (lease owner) the outcome is recorded under. */
  claim: string;
}

export type Plan =
  | { send: SendTask }
  | {
      record: NotificationOutcome;
      /** Why it was recorded without a request, for the counters and the log. */
      because: "none-pending" | "not-due" | "no-url" | "refused";
    };

/** Decides what to do with a claimed message: send its first pending notification, or record at once. */
export function planNotification(
  message: NotifyingMessage,
  account: WebhookAccount | undefined,
  claim: string,
  now: Date,
  allowPrivate: boolean,
): Plan {
  const length = message.notifications.length;
  const index = message.notifications.findIndex((n) => n.state === "pending");
  const notification = index < 0 ? undefined : message.notifications[index];
  const base = { ...ofMessage(message), length, claim };
  if (!notification) return { record: { ...base, index: length }, because: "none-pending" };
  const last = FINAL_STATUSES.has(notification.status);
  const handled = { ...base, index, notification: { ...notification } };
  if (notification.nextAttemptAt && notification.nextAttemptAt.getTime() > now.getTime()) {
    return {
      record: {
        ...handled,
        state: "pending",
        nextAttemptAt: notification.nextAttemptAt,
        deferred: true,
      },
      because: "not-due",
    };
  }
  const callback = message.statusCallback || account?.statusUrl;
  if (!callback) return { record: { ...handled, state: "skipped", last }, because: "no-url" };
  let url: URL;
  try {
    url = notificationUrl(callback, message._id, notification.status, message.batchId, {
      reason: notification.status === "DELIVERY_ERROR" ? message.reason : undefined,
      clientRef: message.clientRef,
    });
    checkCallbackUrl(url, allowPrivate);
  } catch (error) {
    return {
      record: {
        ...handled,
        state: "gave_up",
        url: callback,
        attempt: refusedAttempt(error, now),
        last,
      },
      because: "refused",
    };
  }
  return {
    send: {
      accountId: message.accountId,
      receiver: receiverKey(url),
      url,
      message,
      index,
      status: notification.status,
      attemptsBefore: notification.attempts.length,
      callback,
      account,
      claim,
    },
  };
}

/** The outcome of one request: delivered, a retry at its time, or given up. */
export function attemptOutcome(
  task: SendTask,
  result: AttemptResult,
  at: Date,
  schedule: readonly number[],
  now: Date,
): NotificationOutcome {
  const { message, index } = task;
  const snapshot = message.notifications[index];
  const after = afterAttempt(result, at, task.attemptsBefore, schedule, now);
  const outcome: NotificationOutcome = {
    ...ofMessage(message),
    length: message.notifications.length,
    index,
    claim: task.claim,
    ...(snapshot && { notification: { ...snapshot } }),
    url: task.callback,
    attempt: after.attempt,
    last: FINAL_STATUSES.has(task.status),
    state: after.state,
  };
  if (after.nextAttemptAt) outcome.nextAttemptAt = after.nextAttemptAt;
  return outcome;
}

/** A URL refused before any request (not public, or unusable): its one recorded attempt. */
export function refusedAttempt(error: unknown, now: Date): WebhookAttemptDoc {
  return { at: now, httpStatus: 0, error: describe(error), durationMs: 0 };
}

/**
 * What one request (made at `at`, after `attemptsBefore` others) leaves of a webhook: delivered on
 * any 2xx, else again after the schedule's next delay, or given up once the schedule ran out or
 * when retrying cannot help (a refused address).
 */
export function afterAttempt(
  result: AttemptResult,
  at: Date,
  attemptsBefore: number,
  schedule: readonly number[],
  now: Date,
): {
  attempt: WebhookAttemptDoc;
  state: "delivered" | "gave_up" | "pending";
  nextAttemptAt?: Date;
} {
  const attempt: WebhookAttemptDoc = {
    at,
    httpStatus: result.httpStatus,
    durationMs: result.durationMs,
  };
  if (result.error) attempt.error = result.error;
  if (result.httpStatus >= 200 && result.httpStatus < 300) return { attempt, state: "delivered" };
  const delay = result.permanent ? undefined : retryDelayMs(schedule, attemptsBefore + 1);
  if (delay === undefined) return { attempt, state: "gave_up" };
  return { attempt, state: "pending", nextAttemptAt: new Date(now.getTime() + delay) };
}

/**
 * The outcome of a claimed message put back unattempted: its first pending notification due again
 * at `at`, its own retry time unchanged (nothing to do when none is pending).
 */
export function putBackOutcome(
  message: NotifyingMessage,
  claim: string,
  at: Date,
): NotificationOutcome {
  const length = message.notifications.length;
  const index = message.notifications.findIndex((n) => n.state === "pending");
  const notification = message.notifications[index];
  if (!notification) return { ...ofMessage(message), claim, length, index: length };
  return {
    ...ofMessage(message),
    claim,
    length,
    index,
    notification: { ...notification },
    state: "pending",
    nextAttemptAt: at,
    deferred: true,
  };
}

/** Whether the claimed snapshot holds a pending notification after the one at `index`. */
export function hasNextPending(message: NotifyingMessage, index: number): boolean {
  return message.notifications[index + 1]?.state === "pending";
}

/**
 * An outcome's message: its id, its class, which ranks its next notification, and its group, which
 * its next notification (or its retry's group) takes turns in.
 */
function ofMessage(
  message: NotifyingMessage,
): Pick<NotificationOutcome, "messageId" | "deliveryClass" | "group"> {
  const group = notifyGroupOf(message);
  return message.deliveryClass === undefined
    ? { messageId: message._id, group }
    : { messageId: message._id, deliveryClass: message.deliveryClass, group };
}
