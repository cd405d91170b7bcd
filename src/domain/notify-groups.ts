/**
 * The groups an account's status notifications take turns between (docs/design.md "Status
 * webhooks"): each batch, and the single sends of each class (OTP sender, other) to each receiver
 * (the account's status URL, or a `statusCallback`'s scheme, host, port and path), each beside a
 * group of its own retries. A message carries its group's key (`notifyGroup`) while a notification
 * of it may still come; the key starts with its account, so an account's groups are one range of
 * keys, found one index seek each.
 */

import type { DeliveryClass } from "./delivery-priority.ts";

/** What names a message's group. */
export interface NotifyGroupOf {
  accountId: string;
  batchId?: number;
  deliveryClass?: DeliveryClass;
  statusCallback?: string;
}

/** Between the account and the rest of a key: sorts below every character a key part holds. */
const SEPARATOR = " ";
/** The character after SEPARATOR: the end of an account's range. */
const RANGE_END = "!";
const RETRIES = "|retries";

/** The key of a message's group (its retries aside). */
export function notifyGroupOf(message: NotifyGroupOf): string {
  const prefix = `${message.accountId}${SEPARATOR}`;
  if (message.batchId !== undefined) return `${prefix}b:${message.batchId}`;
  const cls = message.deliveryClass === "otp" ? "o" : "s";
  return `${prefix}${cls}:${receiverOf(message.statusCallback)}`;
}

/** The group of the retries of `group`'s notifications: they take their turns beside it. */
export function retryGroupOf(group: string): string {
  return group.endsWith(RETRIES) ? group : `${group}${RETRIES}`;
}

/** The keys of an account's groups: `from` (inclusive) up to `to` (exclusive). */
export function notifyGroupRange(accountId: string): { from: string; to: string } {
  return { from: `${accountId}${SEPARATOR}`, to: `${accountId}${RANGE_END}` };
}

/** The smallest key after `key`. */
export function nextGroupKey(key: string): string {
  return `${key}\u0000`;
}

/** Scheme, host, port and path of a callback (its query names the notification, not the receiver). */
function receiverOf(callback: string | undefined): string {
  if (!callback) return "";
  try {
    const url = new URL(callback);
    return `${url.origin}${url.pathname}`;
  } catch {
    return callback;
  }
}
