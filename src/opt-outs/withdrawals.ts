/**
 * Withdrawing accepted messages before they reach the carrier, their credit given back: the
 * messages of a recipient who opted out after they were accepted (docs/design.md "Two-way messaging":
 * "SEND_ERROR, its credit refunded").
 *
 * Crash safety without transactions, in the order of store/charges.ts: (1) a pending refund is
 * pushed on the account (no credit yet), (2) the messages still ACCEPTED become SEND_ERROR marked
 * with the refund's `ref`, each with its webhook, (3) the refund is settled: the price of the
 * messages marked with its ref is credited and the record removed, in one update that applies
 * once. A crash after (1) leaves the record to the settler (settleAbandonedCharges), which does (3)
 * once no write of (2) can land; a message withdrawn by two refunds at once is marked by one only.
 */

import type { Collection, Filter } from "mongodb";
import type { MessageDoc } from "../store/documents.ts";
import type { MoneyCollections } from "../store/ledger.ts";
import { pushPendingRefund, settleWithdrawal } from "../store/refunds.ts";
import { changeStatus } from "../store/status-changes.ts";

/** What a withdrawn message records as its send error. */
export const OPTED_OUT_ERROR = "the recipient opted out before the message was sent";

export interface Withdrawable {
  _id: number;
  parts: number;
  /** What each of its parts was charged; absent on messages stored before prices by destination. */
  pricePerPartMicros?: number;
}

/**
 * Withdraws those of `messages` (one account's) that are still ACCEPTED and match `filter`, and
 * refunds them what they were charged (`pricePerPartMicros` per part for messages that do not
 * keep their price). Returns the ids withdrawn.
 */
export function withdrawMessages(
  collections: MoneyCollections & { messages: Collection<MessageDoc> },
  accountId: string,
  messages: readonly Withdrawable[],
  pricePerPartMicros: number,
  now: Date,
  filter: Filter<MessageDoc> = {},
  sendError = OPTED_OUT_ERROR,
): Promise<number[]> {
  return refundUnsent(collections, accountId, messages, pricePerPartMicros, now, {
    status: "SEND_ERROR",
    set: { sendError },
    filter,
  });
}

/** What becomes of the messages `refundUnsent` takes back. */
export interface UnsentChange {
  /** SEND_ERROR for a withdrawal, CANCELED for a cancel. */
  status: "SEND_ERROR" | "CANCELED";
  set?: Partial<MessageDoc>;
  /** Further conditions a message must meet (e.g. no live claim). */
  filter?: Filter<MessageDoc>;
}

/**
 * The one refund of messages that never left (a withdrawal after an opt-out, a cancel): those of
 * `messages` still ACCEPTED and matching `change.filter` take `change.status`, each with its
 * webhook, and their price is credited back exactly once, crash-safe in the order above (pending
 * refund, marks, settlement; the settler finishes what a crash leaves). Returns the ids taken.
 * The money side is `settleWithdrawal` (store/refunds.ts), which writes the refund's ledger entry
 * and usage with the settlement.
 */
export async function refundUnsent(
  collections: MoneyCollections & { messages: Collection<MessageDoc> },
  accountId: string,
  messages: readonly Withdrawable[],
  pricePerPartMicros: number,
  now: Date,
  change: UnsentChange,
): Promise<number[]> {
  if (messages.length === 0) return [];
  const priced = messages.map((m) => ({
    id: m._id,
    amountMicros: Math.max(1, m.parts) * (m.pricePerPartMicros ?? pricePerPartMicros),
  }));
  const refund = await pushPendingRefund(collections.accounts, accountId, priced, now);
  // Replies to opt-out words are never withdrawn: they confirm the block they pass.
  await changeStatus(
    collections.messages,
    priced.map((m) => m.id),
    ["ACCEPTED"],
    {
      status: change.status,
      set: { ...change.set, withdrawal: refund.ref },
      unset: ["deliveryAt", "deliveryLease"],
    },
    now,
    { filter: { keywordReply: { $exists: false }, ...change.filter } },
  );
  return (await settleWithdrawal(collections, accountId, refund)) ?? [];
}
