import type { Collection, Document } from "mongodb";
import type { Deadline } from "./deadline.ts";
import type { AccountDoc, ChargedMessage, PendingCharge } from "./documents.ts";
import {
  type LedgerRecord,
  type MoneyCollections,
  recordEntries,
  spendIncrements,
  utcDay,
} from "./ledger.ts";
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

/**
 * "busy": MAX_PENDING_CHARGES are pending; "over_daily_limit": the account's daily spend limit
 * would be passed (docs/design.md "Money", "Spend controls"); nothing charged.
 */
export type DebitResult = { creditMicros: number } | "insufficient" | "busy" | "over_daily_limit";

type CallOptions = { maxTimeMS?: number; signal?: AbortSignal };

/** The daily limit the caller believes the account has (its cached view); undefined: none. */
export type KnownLimit = number | undefined;

export async function debit(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  charge: PendingCharge,
  options: CallOptions = {},
  dailyLimit?: KnownLimit,
): Promise<DebitResult> {
  let limit = dailyLimit;
  // The filter pins the limit it was built for: when it changed meanwhile, once more with the new.
  for (let attempt = 0; attempt < 3; attempt++) {
    const updated = await accounts.findOneAndUpdate(
      { ...debitFilter(apiKey, charge), ...dailyLimitFilter(charge, limit) },
      debitUpdate(charge),
      { returnDocument: "after", projection: { creditMicros: 1 }, ...options },
    );
    if (updated) return { creditMicros: updated.creditMicros };
    const landed = await debitLanded(accounts, apiKey, charge, options);
    if (landed) return landed;
    const account = await accountMoney(accounts, apiKey, charge.at, options);
    if (account.full) return "busy";
    if (account.creditMicros < charge.amountMicros) return "insufficient";
    if (
      account.dailyLimit !== undefined &&
      account.spentToday + charge.amountMicros > account.dailyLimit
    )
      return "over_daily_limit";
    limit = account.dailyLimit;
  }
  return "busy";
}

/**
 * The debit's update: the credit, the day's spend and the pending record, in one write. Only
 * today's spend matters to the limit: the week before is removed as it goes, so the map stays a
 * few keys long (a refund of an older charge may bring one back; the next debits remove it).
 */
export function debitUpdate(charge: PendingCharge) {
  const unset: Record<string, ""> = {};
  for (let back = 1; back <= SPEND_DAYS_KEPT_CLEAN; back++) {
    unset[`spentByDay.${utcDay(new Date(charge.at.getTime() - back * DAY_MS))}`] = "";
  }
  return {
    $inc: {
      creditMicros: -charge.amountMicros,
      [`spentByDay.${utcDay(charge.at)}`]: charge.amountMicros,
    },
    $unset: unset,
    $push: { pendingCharges: charge },
  };
}

const DAY_MS = 86_400_000;
/** Days before the debit's whose spend it removes. */
const SPEND_DAYS_KEPT_CLEAN = 7;

/**
 * The debit applies only while the account's daily limit is `limit` and the day's spend leaves
 * room for the charge: checked in the update's own filter, so concurrent debits on any instance
 * never pass it, not by one message.
 */
export function dailyLimitFilter(
  charge: Pick<PendingCharge, "at" | "amountMicros">,
  limit: KnownLimit,
): Document {
  if (limit === undefined) return { "spendControls.dailySpendLimitMicros": { $exists: false } };
  return {
    "spendControls.dailySpendLimitMicros": limit,
    [`spentByDay.${utcDay(charge.at)}`]: { $not: { $gt: limit - charge.amountMicros } },
  };
}

/** What decides a refused debit: credit, room for a record, the daily limit and the day's spend. */
export async function accountMoney(
  accounts: Collection<AccountDoc>,
  apiKey: string,
  at: Date,
  options: CallOptions = {},
): Promise<{
  creditMicros: number;
  full: boolean;
  dailyLimit: KnownLimit;
  spentToday: number;
  listVersion: number;
}> {
  const day = utcDay(at);
  const [account, full] = await Promise.all([
    accounts.findOne(
      { _id: apiKey },
      {
        projection: {
          creditMicros: 1,
          optOutsVersion: 1,
          "spendControls.dailySpendLimitMicros": 1,
          [`spentByDay.${day}`]: 1,
        },
        ...options,
      },
    ),
    accounts.countDocuments(
      { _id: apiKey, [`pendingCharges.${MAX_PENDING_CHARGES - 1}`]: { $exists: true } },
      { limit: 1, ...options },
    ),
  ]);
  return {
    creditMicros: account?.creditMicros ?? 0,
    full: full > 0,
    dailyLimit: account?.spendControls?.dailySpendLimitMicros,
    spentToday: account?.spentByDay?.[day] ?? 0,
    listVersion: account?.optOutsVersion ?? 0,
  };
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
  money: MoneyCollections,
  apiKey: string,
  charge: PendingCharge,
  storeIt: () => Promise<void>,
  undo: () => Promise<void> = async () => undefined,
  deadline?: Deadline,
  dailyLimit?: KnownLimit,
): Promise<DebitResult> {
  let debited: DebitResult;
  try {
    debited = await debit(money.accounts, apiKey, charge, deadline?.options(), dailyLimit);
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
      await refund(money, apiKey, charge);
    } catch {
      // Left pending: settleAbandonedCharges undoes and refunds it.
    }
    throw error;
  }
  return debited;
}

/** Gives a charge back when its request failed before storing anything (no entry: net 0). */
export async function refund(
  money: MoneyCollections,
  apiKey: string,
  charge: PendingCharge,
): Promise<void> {
  await settleCharge(money, apiKey, charge, charge.amountMicros);
}

/** How a settlement changes the ledger, usage and the days' spend. */
export interface Settlement {
  /** The entry (with its usage) written before the record goes; none when nothing changed. */
  record?: LedgerRecord;
  /** Spend given back, by day of the charge (refunds of those charges). */
  unspent?: ReadonlyMap<string, number>;
}

/**
 * Removes a pending charge, giving `refundMicros` of it back, in one update that only applies
 * while the record is there: settling twice (the settler beside a confirmation) refunds once. Its
 * ledger entry is written first (idempotently), so a crash between the two leaves the record to
 * the settler, which writes the same entry again and then removes it.
 */
export async function settleCharge(
  money: MoneyCollections,
  apiKey: string,
  charge: Pick<PendingCharge, "ref" | "kind" | "at" | "amountMicros">,
  refundMicros: number,
  settlement: Settlement = {},
): Promise<boolean> {
  if (settlement.record) await recordEntries(money, [settlement.record]);
  // A charge given back (in part) gives its day's spend back too; a refund record gives back the
  // spend of the days its messages were charged on.
  const unspent =
    settlement.unspent ??
    (charge.kind !== "refund" && charge.kind !== "credit" && refundMicros > 0
      ? new Map([[utcDay(charge.at), refundMicros]])
      : new Map<string, number>());
  const inc = {
    ...(refundMicros > 0 && { creditMicros: refundMicros }),
    ...spendIncrements(unspent, -1),
  };
  const result = await money.accounts.updateOne(
    { _id: apiKey, pendingCharges: { $elemMatch: { ref: charge.ref, kind: charge.kind } } },
    {
      ...(Object.keys(inc).length > 0 && { $inc: inc }),
      $pull: { pendingCharges: { ref: charge.ref, kind: charge.kind } },
    },
  );
  return result.modifiedCount > 0;
}

/** The messages a charge of single sends pays for. */
export function chargedMessages(charge: PendingCharge): ChargedMessage[] {
  return charge.messages ?? [{ id: charge.ref, amountMicros: charge.amountMicros }];
}
