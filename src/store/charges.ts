import type { Collection } from "mongodb";
import type { AccountDoc, BatchDoc, MessageDoc, PendingCharge } from "./documents.ts";

// Credit is debited before anything is stored, together with a pending-charge record in the same
// atomic update. The stored message (or batch document) confirms the charge; a charge left
// pending by a crash is settled by `settleAbandonedCharges`: confirmed when its message or batch
// exists, refunded otherwise. No multi-document transaction is needed.

export type DebitResult = { creditMicros: number } | "insufficient";

export async function debit(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  charge: PendingCharge,
): Promise<DebitResult> {
  const updated = await accounts.findOneAndUpdate(
    { _id: apiKey, creditMicros: { $gte: charge.amountMicros } },
    { $inc: { creditMicros: -charge.amountMicros }, $push: { pendingCharges: charge } },
    { returnDocument: "after", projection: { creditMicros: 1 } },
  );
  return updated ? { creditMicros: updated.creditMicros } : "insufficient";
}

/**
 * Debits, then stores with `storeIt`. When storing fails, `undo` removes what was stored and the
 * charge is given back; if either fails, the charge stays pending and the settler does both.
 */
export async function chargeThenStore(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  charge: PendingCharge,
  storeIt: () => Promise<void>,
  undo: () => Promise<void> = async () => undefined,
): Promise<DebitResult> {
  const debited = await debit(accounts, apiKey, charge);
  if (debited === "insufficient") return debited;
  try {
    await storeIt();
  } catch (error) {
    try {
      await undo();
      await refund(accounts, apiKey, charge);
    } catch {
      // Left pending: settleAbandonedCharges undoes and refunds it.
    }
    throw error;
  }
  return debited;
}

/** Gives a charge back when its request failed before storing anything. */
export async function refund(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  charge: PendingCharge,
): Promise<void> {
  await accounts.updateOne(
    { _id: apiKey, pendingCharges: { $elemMatch: { ref: charge.ref, kind: charge.kind } } },
    {
      $inc: { creditMicros: charge.amountMicros },
      $pull: { pendingCharges: { ref: charge.ref, kind: charge.kind } },
    },
  );
}

/**
 * Removes the pending records of charges whose messages are stored. Confirmations are buffered
 * and written per account in one bulk write, off the request path.
 */
export class ChargeConfirmations {
  /** Refs to confirm, by account and kind. */
  private buffered = new Map<
    string,
    { apiKey: string; kind: PendingCharge["kind"]; refs: number[] }
  >();
  private flushing: Promise<void> = Promise.resolve();
  private flushScheduled = false;

  /** `onError` hears of a failed flush; the records stay pending and the settler resolves them. */
  constructor(
    private readonly accounts: Collection<AccountDoc>,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /**
   * Buffers a confirmation and schedules a flush, so everything confirmed meanwhile is written
   * together: the account document's pending list stays as short as the writes in flight, which
   * keeps every debit of that account cheap.
   */
  add(apiKey: string, charge: PendingCharge): void {
    const key = `${charge.kind}:${apiKey}`;
    const entry = this.buffered.get(key);
    if (entry) entry.refs.push(charge.ref);
    else this.buffered.set(key, { apiKey, kind: charge.kind, refs: [charge.ref] });
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush().catch(this.onError);
    });
  }

  /** Writes what is buffered. Failures keep the records pending, which the settler resolves. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.buffered.size === 0) return;
      const batch = this.buffered;
      this.buffered = new Map();
      await this.accounts.bulkWrite(
        [...batch.values()].map(({ apiKey, kind, refs }) => ({
          updateOne: {
            filter: { _id: apiKey },
            update: { $pull: { pendingCharges: { kind: { $eq: kind }, ref: { $in: refs } } } },
          },
        })),
        { ordered: false },
      );
    });
    return this.flushing;
  }
}

/**
 * Settles charges left pending longer than `olderThanMs` (a crash between debit and store):
 * a single send is confirmed if its message exists, else refunded; a batch is confirmed if its
 * document (its commit) exists, else its partly stored messages, which nobody has worked, are
 * deleted and the charge refunded.
 */
export async function settleAbandonedCharges(
  collections: {
    accounts: Collection<AccountDoc>;
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
    { projection: { pendingCharges: 1 } },
  );
  for await (const account of stale) {
    for (const charge of account.pendingCharges) {
      if (charge.at >= cutoff) continue;
      const stored =
        charge.kind === "message"
          ? await collections.messages.countDocuments({ _id: charge.ref }, { limit: 1 })
          : await collections.batches.countDocuments({ _id: charge.ref }, { limit: 1 });
      if (stored) {
        await collections.accounts.updateOne(
          { _id: account._id },
          { $pull: { pendingCharges: { ref: charge.ref, kind: charge.kind } } },
        );
        result.confirmed++;
      } else {
        if (charge.kind === "batch") await collections.messages.deleteMany({ batchId: charge.ref });
        await refund(collections.accounts, account._id, charge);
        result.refunded++;
      }
    }
  }
  return result;
}
