import type { Store } from "./database.ts";
import { ensureInboundMessageIndexes } from "./inbound-messages.ts";
import { ensureInboundPartIndexes } from "./inbound-parts.ts";
import { ensureLedgerIndexes } from "./ledger.ts";
import { ensureListingIndexes } from "./message-listing.ts";
import { ensureNumberIndexes } from "./numbers.ts";
import { SEQUENCES } from "./sequences.ts";
import { ensureUnmatchedReceiptIndexes } from "./unmatched-receipts.ts";

/**
 * Seeds the id sequences, then creates the indexes of the store's own collections (a capability
 * room creates its own: the opt-out list's in src/opt-outs/list.ts); both are no-ops when done
 * already. The sequences first, one at a time: two first reservations racing to create the
 * counters collection are safe on mongod, but the emulator could then hand out one id twice.
 */
export async function ensureIndexes(store: Store): Promise<void> {
  for (const name of SEQUENCES) {
    await store.counters.updateOne({ _id: name }, { $setOnInsert: { seq: 0 } }, { upsert: true });
  }
  await Promise.all([
    store.messages.createIndex({ batchId: 1, _id: 1 }, { name: "batch_messages" }),
    store.messages.createIndex({ notifyAt: 1 }, { name: "notify_due", sparse: true }),
    store.messages.createIndex({ deliveryAt: 1 }, { name: "delivery_due", sparse: true }),
    // A lane's claims and its next due time: an account's due work in due order.
    store.messages.createIndex({ accountId: 1, deliveryAt: 1 }, { name: "account_delivery_due" }),
    store.messages.createIndex({ accountId: 1, notifyAt: 1 }, { name: "account_notify_due" }),
    // The groups an account's notifications take turns between, and each group's due work in
    // due order (notifier/notify-turns.ts). Only messages with a notification to come have a group.
    store.messages.createIndex(
      { notifyGroup: 1, notifyAt: 1 },
      { name: "notify_groups", sparse: true },
    ),
    ...(["delivery", "notify", "inbound"] as const).flatMap((queue) => [
      store.lanes.createIndex({ [`${queue}.dueAt`]: 1 }, { name: `${queue}_due`, sparse: true }),
      store.lanes.createIndex({ [`${queue}.servedAt`]: 1 }, { name: `${queue}_served` }),
    ]),
    // Receipts from a carrier that does not echo our message id are matched by its part ids.
    store.messages.createIndex({ carrierIds: 1 }, { name: "carrier_ids", sparse: true }),
    store.accounts.createIndex({ "pendingCharges.at": 1 }, { name: "pending_charges" }),
    // Messages whose unsent parts are still to be refunded (money/refunds.ts): few at a time.
    store.messages.createIndex({ refundDue: 1 }, { name: "refund_due", sparse: true }),
    ensureLedgerIndexes(store),
    // Usage rows of an account over a range of days.
    store.usage.createIndex({ accountId: 1, day: 1 }, { name: "account_day" }),
    // Every account's usage rows, newest day first, for the operator's console: written on a
    // row's insert only (its counters change, its day and account never do).
    store.usage.createIndex({ day: -1, accountId: 1 }, { name: "day_account" }),
    // Held accounts, read by every worker every 2 s (accounts/held-messages.ts): few, sparse.
    store.accounts.createIndex({ status: 1 }, { name: "held_accounts", sparse: true }),
    store.senderNames.createIndex(
      { accountId: 1, name: 1 },
      { name: "account_sender_name", unique: true },
    ),
    // The lists' pages (ListMessages and friends).
    ensureListingIndexes(store),
    // Two-way messaging: numbers and inbound messages.
    ensureNumberIndexes(store.db),
    ensureUnmatchedReceiptIndexes(store.db),
    ensureInboundMessageIndexes(store.db),
    ensureInboundPartIndexes(store.db),
  ]);
}
