import type { Collection } from "mongodb";
import { backgroundWriteOptions, type Deadline } from "./deadline.ts";
import type {
  AccountDoc,
  BatchDoc,
  ChargedMessage,
  MessageDoc,
  PendingCharge,
} from "./documents.ts";
import { mayHaveLanded, OutcomeUnknown } from "./write-outcomes.ts";

// Credit is debited before anything is stored, together with a pending-charge record in the same
// atomic update. The stored message (or batch document) confirms the charge; a charge left
// pending by a crash or an unknown write outcome is settled by `settleAbandonedCharges`: confirmed
// for what is stored, refunded for the rest. No multi-document transaction is needed.

/**
 * Pending charges an account may hold at once (single sends count one per group written
 * together, a batch one). Past it a debit is refused as "busy": the array stays far below the
 * 16 MB document limit and every debit cheap, whatever stalls the database.
 */
export const MAX_PENDING_CHARGES = 100;

/** "busy": MAX_PENDING_CHARGES are pending; nothing charged. */
export type DebitResult = { creditMicros: number } | "insufficient" | "busy";

type CallOptions = { maxTimeMS?: number; signal?: AbortSignal };

export async function debit(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  charge: PendingCharge,
  options: CallOptions = {},
): Promise<DebitResult> {
  const updated = await accounts.findOneAndUpdate(
    debitFilter(apiKey, charge),
    { $inc: { creditMicros: -charge.amountMicros }, $push: { pendingCharges: charge } },
    { returnDocument: "after", projection: { creditMicros: 1 }, ...options },
  );
  if (updated) return { creditMicros: updated.creditMicros };
  const landed = await debitLanded(accounts, apiKey, charge, options);
  if (landed) return landed;
  const full = await accounts.countDocuments(
    { _id: apiKey, [`pendingCharges.${MAX_PENDING_CHARGES - 1}`]: { $exists: true } },
    { limit: 1, ...options },
  );
  return full ? "busy" : "insufficient";
}

/**
 * The account, if the debit of `charge` applies: enough credit, room for one more pending charge,
 * and not debited already. The last makes a debit apply once even when it is sent twice (the
 * driver retries a write whose answer was lost; a server without retryable-write bookkeeping,
 * like the test emulator, would apply it again).
 */
export function debitFilter(apiKey: string, charge: PendingCharge) {
  return {
    _id: apiKey,
    creditMicros: { $gte: charge.amountMicros },
    [`pendingCharges.${MAX_PENDING_CHARGES - 1}`]: { $exists: false },
    pendingCharges: { $not: { $elemMatch: { ref: charge.ref, kind: charge.kind } } },
  };
}

/** When a debit matched nothing: the credit after it if it had landed already (a retry). */
export async function debitLanded(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  charge: PendingCharge,
  options: CallOptions = {},
): Promise<{ creditMicros: number } | undefined> {
  const account = await accounts.findOne(
    { _id: apiKey, pendingCharges: { $elemMatch: { ref: charge.ref, kind: charge.kind } } },
    { projection: { creditMicros: 1 }, ...options },
  );
  return account ? { creditMicros: account.creditMicros } : undefined;
}

/**
 * Debits, then stores with `storeIt` (issued under `deadline`). When storing fails and nothing of
 * it can still land, `undo` removes what was stored and the charge is given back. When the outcome
 * is unknown (a lost answer, a timeout) or the undo fails, the charge stays pending and the
 * settler decides from what is stored, once the request's writes can no longer land.
 */
export async function chargeThenStore(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  charge: PendingCharge,
  storeIt: () => Promise<void>,
  undo: () => Promise<void> = async () => undefined,
  deadline?: Deadline,
): Promise<DebitResult> {
  let debited: DebitResult;
  try {
    debited = await debit(accounts, apiKey, charge, deadline?.options());
  } catch (error) {
    throw mayHaveLanded(error) ? new OutcomeUnknown(error) : error;
  }
  if (typeof debited === "string") return debited;
  try {
    await storeIt();
  } catch (error) {
    if (mayHaveLanded(error)) throw new OutcomeUnknown(error);
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
  await settleCharge(accounts, apiKey, charge, charge.amountMicros);
}

/**
 * Removes a pending charge, giving `refundMicros` of it back, in one update that only applies
 * while the record is there: settling twice (the settler beside a confirmation) refunds once.
 */
export async function settleCharge(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  charge: Pick<PendingCharge, "ref" | "kind">,
  refundMicros: number,
): Promise<boolean> {
  const result = await accounts.updateOne(
    { _id: apiKey, pendingCharges: { $elemMatch: { ref: charge.ref, kind: charge.kind } } },
    {
      ...(refundMicros > 0 && { $inc: { creditMicros: refundMicros } }),
      $pull: { pendingCharges: { ref: charge.ref, kind: charge.kind } },
    },
  );
  return result.modifiedCount > 0;
}

/** The messages a charge of single sends pays for. */
export function chargedMessages(charge: PendingCharge): ChargedMessage[] {
  return charge.messages ?? [{ id: charge.ref, amountMicros: charge.amountMicros }];
}

/**
 * How long a confirmation may wait for those of the groups behind it while the message writer
 * has sends waiting. The records a wait adds to an account's pending list are the groups written
 * in it (a handful, against MAX_PENDING_CHARGES).
 */
const CONFIRM_DEFER_MS = 20;

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
  /** A flush on the next turn of the event loop is scheduled. */
  private flushScheduled = false;
  /** A deferred flush (under load) is scheduled. */
  private deferred: NodeJS.Timeout | undefined;

  /** `onError` hears of a failed flush; the records stay pending and the settler resolves them. */
  constructor(
    private readonly accounts: Collection<AccountDoc>,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /**
   * Buffers a confirmation and schedules a flush, so everything confirmed meanwhile is written
   * together: the account document's pending list stays as short as the writes in flight, which
   * keeps every debit of that account cheap. `more`: further writes are already waiting (the
   * message writer under load), so the flush may wait up to CONFIRM_DEFER_MS for their
   * confirmations: one write for several groups instead of one per group (issue 43). Without
   * `more` everything buffered is written on the next turn of the event loop.
   */
  add(apiKey: string, charge: PendingCharge, more = false): void {
    const key = `${charge.kind}:${apiKey}`;
    const entry = this.buffered.get(key);
    if (entry) entry.refs.push(charge.ref);
    else this.buffered.set(key, { apiKey, kind: charge.kind, refs: [charge.ref] });
    if (this.flushScheduled) return;
    if (more) {
      this.deferred ??= setTimeout(() => this.scheduledFlush(), CONFIRM_DEFER_MS).unref();
      return;
    }
    this.flushScheduled = true;
    setImmediate(() => this.scheduledFlush());
  }

  private scheduledFlush(): void {
    this.flushScheduled = false;
    clearTimeout(this.deferred);
    this.deferred = undefined;
    this.flush().catch(this.onError);
  }

  /** Writes what is buffered. Failures keep the records pending, which the settler resolves. */
  flush(): Promise<void> {
    // After a failed flush the next one still runs: its failure was reported to its caller.
    this.flushing = this.flushing
      .catch(() => undefined)
      .then(async () => {
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
          { ordered: false, ...backgroundWriteOptions() },
        );
      });
    return this.flushing;
  }
}

/** Reads that decide a settlement: on the primary, of majority-committed (durable) writes only. */
const DURABLE_READ = { readPreference: "primary", readConcern: { level: "majority" } } as const;

/**
 * Settles charges left pending longer than `olderThanMs`, which must exceed twice the longest
 * request deadline (config: SMS_SETTLE_AFTER_MS), so no write of their requests can still land:
 * single sends are confirmed for the messages stored and refunded for the others; a batch is
 * confirmed if its document (its commit) exists, else its partly stored messages, which nobody
 * has worked, are deleted and the charge refunded.
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
    { projection: { pendingCharges: 1 }, ...DURABLE_READ },
  );
  for await (const account of stale) {
    for (const charge of account.pendingCharges) {
      if (charge.at >= cutoff) continue;
      if (charge.kind === "message") {
        const messages = chargedMessages(charge);
        const stored = new Set(
          (
            await collections.messages
              .find(
                { _id: { $in: messages.map((m) => m.id) } },
                { projection: { _id: 1 }, ...DURABLE_READ },
              )
              .toArray()
          ).map((m) => m._id),
        );
        const missing = messages.filter((m) => !stored.has(m.id));
        const refundMicros = missing.reduce((sum, m) => sum + m.amountMicros, 0);
        if (await settleCharge(collections.accounts, account._id, charge, refundMicros)) {
          result.confirmed += stored.size;
          result.refunded += missing.length;
        }
        continue;
      }
      if (charge.kind === "refund") {
        if ((await settleWithdrawal(collections, account._id, charge)) !== undefined)
          result.refunded++;
        continue;
      }
      const committed = await collections.batches.countDocuments(
        { _id: charge.ref },
        { limit: 1, ...DURABLE_READ },
      );
      if (committed) {
        if (await settleCharge(collections.accounts, account._id, charge, 0)) result.confirmed++;
      } else {
        await collections.messages.deleteMany({ batchId: charge.ref });
        if (await settleCharge(collections.accounts, account._id, charge, charge.amountMicros))
          result.refunded++;
      }
    }
  }
  return result;
}

/**
 * Settles a pending refund (opt-outs/withdrawals.ts): gives back the price of the messages that it
 * withdrew (marked with its `ref`), nothing for the others (they were sent, or withdrawn by
 * another refund), and removes it. Applies once, like every settlement. Returns the withdrawn
 * ids, or undefined when the refund was settled already.
 */
export async function settleWithdrawal(
  collections: { accounts: Collection<AccountDoc>; messages: Collection<MessageDoc> },
  apiKey: string,
  charge: PendingCharge,
): Promise<number[] | undefined> {
  const priced = chargedMessages(charge);
  const withdrawn = new Set(
    (
      await collections.messages
        .find(
          { _id: { $in: priced.map((m) => m.id) }, withdrawal: charge.ref },
          { projection: { _id: 1 }, ...DURABLE_READ },
        )
        .toArray()
    ).map((m) => m._id),
  );
  const refundMicros = priced
    .filter((m) => withdrawn.has(m.id))
    .reduce((sum, m) => sum + m.amountMicros, 0);
  const settled = await settleCharge(collections.accounts, apiKey, charge, refundMicros);
  return settled ? [...withdrawn] : undefined;
}
