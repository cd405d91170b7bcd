import { randomInt } from "node:crypto";
import type { Collection, Document } from "mongodb";
import { backgroundWriteOptions, type Deadline } from "./deadline.ts";
import type {
  AccountDoc,
  BatchDoc,
  ChargedMessage,
  MessageDoc,
  PendingCharge,
} from "./documents.ts";
import {
  chargedUsage,
  entryOf,
  type LedgerRecord,
  type MoneyCollections,
  recordEntries,
  refundedUsage,
  spendIncrements,
  type UsageDelta,
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

/**
 * How long a confirmation may wait for those of the groups behind it while the message writer
 * has sends waiting. The records a wait adds to an account's pending list are the groups written
 * in it (a handful, against MAX_PENDING_CHARGES).
 */
const CONFIRM_DEFER_MS = 20;

/**
 * Removes the pending records of charges whose messages are stored, after writing their ledger
 * entries and usage. Confirmations are buffered and written per account in one bulk write, off
 * the request path.
 */
export class ChargeConfirmations {
  private buffered: { apiKey: string; charge: PendingCharge; usage: readonly UsageDelta[] }[] = [];
  private flushing: Promise<void> = Promise.resolve();
  /** A flush on the next turn of the event loop is scheduled. */
  private flushScheduled = false;
  /** A deferred flush (under load) is scheduled. */
  private deferred: NodeJS.Timeout | undefined;

  /** `onError` hears of a failed flush; the records stay pending and the settler resolves them. */
  constructor(
    private readonly money: MoneyCollections,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /**
   * Buffers a confirmation and schedules a flush, so everything confirmed meanwhile is written
   * together: the account document's pending list stays as short as the writes in flight, which
   * keeps every debit of that account cheap. `usage`: what the charge adds to the usage rows.
   * `more`: further writes are already waiting (the message writer under load), so the flush may
   * wait up to CONFIRM_DEFER_MS for their confirmations: one write for several groups instead of
   * one per group. Without `more` everything buffered is written on the next turn of the loop.
   */
  add(
    apiKey: string,
    charge: PendingCharge,
    usage: readonly UsageDelta[] = [],
    more = false,
  ): void {
    this.buffered.push({ apiKey, charge, usage });
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
        if (this.buffered.length === 0) return;
        const batch = this.buffered;
        this.buffered = [];
        // The entries first: a record goes only once its entry is written.
        await recordEntries(
          this.money,
          batch.map(({ apiKey, charge, usage }) => ({
            entry: entryOf(apiKey, charge, -charge.amountMicros),
            usage,
          })),
        );
        const refs = new Map<
          string,
          { apiKey: string; kind: PendingCharge["kind"]; refs: number[] }
        >();
        for (const { apiKey, charge } of batch) {
          const key = `${charge.kind}:${apiKey}`;
          const entry = refs.get(key);
          if (entry) entry.refs.push(charge.ref);
          else refs.set(key, { apiKey, kind: charge.kind, refs: [charge.ref] });
        }
        await this.money.accounts.bulkWrite(
          [...refs.values()].map(({ apiKey, kind, refs }) => ({
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

/** What the settler reads of a charged message: enough for its usage. */
const USAGE_FIELDS = { _id: 1, createdAt: 1, country: 1, parts: 1 } as const;

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

/**
 * The first step of every refund of messages that never left (a withdrawal, a cancel, unsent
 * parts): the pending record of what the account gets back, pushed in the account's own document
 * before the messages are marked, so a crash at any later point is settled once.
 */
export async function pushPendingRefund(
  accounts: Collection<AccountDoc>,
  accountId: string,
  priced: ChargedMessage[],
  now: Date,
): Promise<PendingCharge> {
  const refund: PendingCharge = {
    // Unique enough to tell two refunds of one account apart (2^47 values).
    ref: randomInt(2 ** 47),
    kind: "refund",
    amountMicros: priced.reduce((sum, m) => sum + m.amountMicros, 0),
    at: now,
    messages: priced,
  };
  await accounts.updateOne(
    { _id: accountId },
    { $push: { pendingCharges: refund } },
    backgroundWriteOptions(),
  );
  return refund;
}

/**
 * Settles a pending refund (opt-outs/withdrawals.ts, money/refunds.ts): gives back the price of
 * the messages it marked (`withdrawal` or `refund` is its `ref`), nothing for the others (they
 * were sent, or marked by another refund), writes its entry and removes it. Applies once, like
 * every settlement. Returns the marked ids, or undefined when the refund was settled already.
 */
export async function settleWithdrawal(
  collections: MoneyCollections & { messages: Collection<MessageDoc> },
  apiKey: string,
  charge: PendingCharge,
): Promise<number[] | undefined> {
  const priced = chargedMessages(charge);
  const ids = priced.map((m) => m.id);
  const marked = new Map(
    (
      await collections.messages
        .find(
          { _id: { $in: ids }, $or: [{ withdrawal: charge.ref }, { refund: charge.ref }] },
          { projection: USAGE_FIELDS, ...DURABLE_READ },
        )
        .toArray()
    ).map((m) => [m._id, m]),
  );
  const given = priced.filter((m) => marked.has(m.id));
  const refundMicros = given.reduce((sum, m) => sum + m.amountMicros, 0);
  const unspent = new Map<string, number>();
  const usage: UsageDelta[] = [];
  for (const m of given) {
    const doc = marked.get(m.id) as MessageDoc;
    const delta = refundedUsage({ ...doc, amountMicros: m.amountMicros });
    usage.push(delta);
    unspent.set(delta.day, (unspent.get(delta.day) ?? 0) + m.amountMicros);
  }
  const record = {
    entry: entryOf(apiKey, charge, refundMicros, { messageIds: given.map((m) => m.id) }),
    usage,
  };
  const settled = await settleCharge(collections, apiKey, charge, refundMicros, {
    record,
    unspent,
  });
  return settled ? [...marked.keys()] : undefined;
}
