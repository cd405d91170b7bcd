import { randomInt } from "node:crypto";
import type { Collection } from "mongodb";
import { chargedMessages, settleCharge } from "./charges.ts";
import { backgroundWriteOptions } from "./deadline.ts";
import type { AccountDoc, ChargedMessage, MessageDoc, PendingCharge } from "./documents.ts";
import { entryOf, type MoneyCollections, refundedUsage, type UsageDelta } from "./ledger.ts";

// Refunds of messages that never left (withdrawn, canceled, unsent parts): pushed as a pending
// record first, settled once (store/charges.ts says how the order keeps a crash safe).

/** Reads that decide a settlement: on the primary, of majority-committed (durable) writes only. */
export const DURABLE_READ = {
  readPreference: "primary",
  readConcern: { level: "majority" },
} as const;

/** What the settler reads of a charged message: enough for its usage. */
export const USAGE_FIELDS = { _id: 1, createdAt: 1, country: 1, parts: 1 } as const;

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
  options: { unsentParts?: true } = {},
): Promise<PendingCharge> {
  const refund: PendingCharge = {
    // Unique enough to tell two refunds of one account apart (2^47 values).
    ref: randomInt(2 ** 47),
    kind: "refund",
    amountMicros: priced.reduce((sum, m) => sum + m.amountMicros, 0),
    at: now,
    messages: priced,
    ...options,
  };
  await accounts.updateOne(
    { _id: accountId },
    { $push: { pendingCharges: refund } },
    backgroundWriteOptions(),
  );
  return refund;
}

/**
 * The second step of a refund of unsent parts: its messages still marked `refundDue` are claimed
 * for it (`refund` is its ref, the mark removed); one claimed by another refund first is not. The
 * sweep does it after pushing the record, and the settler again before settling one: a sweep's
 * claim that lands late (a stalled database, a process killed with the write sent) then finds
 * the marks gone instead of claiming messages for a refund already settled without them.
 */
export async function markUnsentRefund(
  messages: Collection<MessageDoc>,
  refund: PendingCharge,
): Promise<void> {
  await messages.updateMany(
    { _id: { $in: chargedMessages(refund).map((m) => m.id) }, refundDue: true },
    { $unset: { refundDue: "" }, $set: { refund: refund.ref } },
    backgroundWriteOptions(),
  );
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
