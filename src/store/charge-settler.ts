import type { Collection } from "mongodb";
import { chargedMessages, settleCharge } from "./charges.ts";
import type { BatchDoc, MessageDoc } from "./documents.ts";
import {
  chargedUsage,
  entryOf,
  type LedgerRecord,
  type MoneyCollections,
  type UsageDelta,
} from "./ledger.ts";
import { DURABLE_READ, markUnsentRefund, settleWithdrawal, USAGE_FIELDS } from "./refunds.ts";

// The settler: what a crash or an unknown write outcome left pending is confirmed or refunded
// once its requests can no longer land (store/charges.ts says how a charge is made).

/**
 * Settles charges left pending longer than `olderThanMs`, which must exceed twice the longest
 * request deadline (config: SMS_SETTLE_AFTER_MS), so no write of their requests can still land:
 * single sends are confirmed for the messages stored and refunded for the others; a batch is
 * confirmed if its document (its commit) exists, else its partly stored messages, which nobody
 * has worked, are deleted and the charge refunded; a refund gives back what it marked; a credit
 * gets its entry. Each writes its ledger entry before its record goes.
 */
export async function settleAbandonedCharges(
  collections: MoneyCollections & {
    messages: Collection<MessageDoc>;
    batches: Collection<BatchDoc>;
  },
  olderThanMs: number,
  now = new Date(),
): Promise<{ confirmed: number; refunded: number }> {
  const cutoff = new Date(now.getTime() - olderThanMs);
  const result = { confirmed: 0, refunded: 0 };
  const stale = collections.accounts.find(
    { "pendingCharges.at": { $lt: cutoff } },
    { projection: { pendingCharges: 1 }, ...DURABLE_READ },
  );
  for await (const account of stale) {
    for (const charge of account.pendingCharges) {
      if (charge.at >= cutoff) continue;
      if (charge.kind === "message") {
        const messages = chargedMessages(charge);
        const storedDocs = await collections.messages
          .find(
            { _id: { $in: messages.map((m) => m.id) } },
            { projection: USAGE_FIELDS, ...DURABLE_READ },
          )
          .toArray();
        const stored = new Map(storedDocs.map((m) => [m._id, m]));
        const missing = messages.filter((m) => !stored.has(m.id));
        const refundMicros = missing.reduce((sum, m) => sum + m.amountMicros, 0);
        const kept = messages.filter((m) => stored.has(m.id));
        const record: LedgerRecord = {
          entry: entryOf(account._id, charge, -(charge.amountMicros - refundMicros), {
            messageIds: kept.map((m) => m.id),
          }),
          usage: kept.map((m) => {
            const doc = stored.get(m.id) as MessageDoc;
            return chargedUsage({ ...doc, amountMicros: m.amountMicros });
          }),
        };
        if (await settleCharge(collections, account._id, charge, refundMicros, { record })) {
          result.confirmed += stored.size;
          result.refunded += missing.length;
        }
        continue;
      }
      if (charge.kind === "refund") {
        if (charge.unsentParts) await markUnsentRefund(collections.messages, charge);
        if ((await settleWithdrawal(collections, account._id, charge)) !== undefined)
          result.refunded++;
        continue;
      }
      if (charge.kind === "credit") {
        const record = {
          entry: entryOf(account._id, charge, charge.amountMicros, { note: charge.note }),
        };
        if (await settleCharge(collections, account._id, charge, 0, { record })) result.confirmed++;
        continue;
      }
      const committed = await collections.batches.countDocuments(
        { _id: charge.ref },
        { limit: 1, ...DURABLE_READ },
      );
      if (committed) {
        const usage = await batchUsage(collections.messages, charge.ref, DURABLE_READ);
        const record = { entry: entryOf(account._id, charge, -charge.amountMicros), usage };
        if (await settleCharge(collections, account._id, charge, 0, { record })) result.confirmed++;
      } else {
        await collections.messages.deleteMany({ batchId: charge.ref });
        if (await settleCharge(collections, account._id, charge, charge.amountMicros))
          result.refunded++;
      }
    }
  }
  return result;
}

/** A stored batch's usage, from its messages (the settler's path only). */
export async function batchUsage(
  messages: Collection<MessageDoc>,
  batchId: number,
  options: object = {},
): Promise<UsageDelta[]> {
  const docs = await messages
    .find(
      { batchId },
      { projection: { ...USAGE_FIELDS, pricePerPartMicros: 1, keywordReply: 1 }, ...options },
    )
    .toArray();
  return docs.map((m) =>
    chargedUsage({ ...m, amountMicros: Math.max(1, m.parts) * (m.pricePerPartMicros ?? 0) }),
  );
}
