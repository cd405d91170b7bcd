/**
 * Claiming of due notifications (design "Status webhooks"): a message whose first pending
 * notification is due (`notifyAt`) is claimed atomically before it is sent, so only one instance
 * sends it; see src/delivery/scheduling/claims.ts for the mechanics.
 */
import type { Collection } from "mongodb";
import { type ClaimOptions, claimDue } from "../delivery/scheduling/claims.ts";
import type { AccountDoc, MessageDoc } from "../store/documents.ts";

export type NotifyingMessage = Pick<
  MessageDoc,
  "_id" | "accountId" | "batchId" | "statusCallback" | "notifications"
>;

export type NotificationClaimOptions = ClaimOptions;

/** Claims up to `limit` messages with a due notification (see src/delivery/scheduling/claims.ts). */
export function claimDueNotifications(
  messages: Collection<MessageDoc>,
  options: NotificationClaimOptions,
): Promise<NotifyingMessage[]> {
  return claimDue<NotifyingMessage>(
    messages,
    {
      due: "notifyAt",
      lease: "notifyLease",
      claimable: (now) => ({
        $or: [{ notifyLease: { $exists: false } }, { "notifyLease.until": { $lte: now } }],
      }),
    },
    { _id: 1, accountId: 1, batchId: 1, statusCallback: 1, notifications: 1 },
    options,
  );
}

/** Status URL and webhook secret of the given accounts, in one query. */
export async function loadWebhookAccounts(
  accounts: Collection<AccountDoc>,
  ids: readonly string[],
): Promise<Map<string, Pick<AccountDoc, "_id" | "statusUrl" | "webhookSecret">>> {
  const found = await accounts
    .find(
      { _id: { $in: [...new Set(ids)] } },
      { projection: { _id: 1, statusUrl: 1, webhookSecret: 1 } },
    )
    .toArray();
  return new Map(found.map((a) => [a._id, a]));
}
