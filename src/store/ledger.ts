/**
 * The ledger and the usage counters (docs/design.md "Money: what is charged, the ledger, usage and
 * spend controls"). Every change of an account's credit carries a pending record in the account's
 * own update (store/charges.ts); its entry is written here, idempotently (its id comes from the
 * record), before the record goes. So credit at creation + the sum of the entries = the credit
 * whenever nothing is pending, whatever crashed in between.
 *
 * Usage rows (per account, UTC day of the charge and country) are added to only when the entry is
 * new: a crash between the two loses a usage count, never counts one twice (docs/decisions.md,
 * "Money").
 */
import type { AnyBulkWriteOperation, Collection } from "mongodb";
import type { AccountDoc, MessageDoc, PendingCharge } from "./documents.ts";

export type LedgerKind = "CHARGE" | "REFUND" | "CREDIT";

export interface LedgerEntryDoc {
  /** `<accountId>/<id>`: unique across accounts, the same for every write of one change. */
  _id: string;
  accountId: string;
  /** The id the account sees: `ch_<ref>` (single sends), `bt_<batch>`, `rf_<ref>`, `cr_<ref>`. */
  id: string;
  time: Date;
  kind: LedgerKind;
  /** Signed: a charge is negative. */
  amountMicros: number;
  messageIds?: number[];
  batchId?: number;
  note?: string;
}

/** One row of usage: what was charged and refunded of one account's messages of a day and country. */
export interface UsageDoc {
  /** `<accountId>/<day>/<country>`. */
  _id: string;
  accountId: string;
  /** UTC `YYYY-MM-DD` of the charge. */
  day: string;
  /** ISO 3166 alpha-2, `ZZ` for numbers without one. */
  country: string;
  messages: number;
  parts: number;
  chargedMicros: number;
  refundedMicros: number;
}

export type UsageDelta = Pick<
  UsageDoc,
  "day" | "country" | "messages" | "parts" | "chargedMicros" | "refundedMicros"
>;

export interface MoneyCollections {
  accounts: Collection<AccountDoc>;
  ledger: Collection<LedgerEntryDoc>;
  usage: Collection<UsageDoc>;
}

/** A change's entry and what it adds to usage. */
export interface LedgerRecord {
  entry: LedgerEntryDoc;
  usage?: readonly UsageDelta[];
}

export const utcDay = (date: Date) => date.toISOString().slice(0, 10);

/** The country a usage row and the allowed countries use for a message (`ZZ`: none). */
export const countryOf = (country: string | undefined) => country || "ZZ";

const PREFIX: Record<PendingCharge["kind"], string> = {
  message: "ch",
  batch: "bt",
  refund: "rf",
  credit: "cr",
};

const KIND: Record<PendingCharge["kind"], LedgerKind> = {
  message: "CHARGE",
  batch: "CHARGE",
  refund: "REFUND",
  credit: "CREDIT",
};

/** The entry of a pending record settled for `amountMicros` (signed). */
export function entryOf(
  accountId: string,
  charge: Pick<PendingCharge, "kind" | "ref" | "at" | "messages">,
  amountMicros: number,
  extra: { time?: Date; messageIds?: number[]; note?: string } = {},
): LedgerEntryDoc {
  const id = `${PREFIX[charge.kind]}_${charge.ref}`;
  const entry: LedgerEntryDoc = {
    _id: `${accountId}/${id}`,
    accountId,
    id,
    time: extra.time ?? charge.at,
    kind: KIND[charge.kind],
    amountMicros,
  };
  if (charge.kind === "batch") entry.batchId = charge.ref;
  const ids = extra.messageIds ?? (charge.kind === "message" ? messageIdsOf(charge) : undefined);
  if (ids && ids.length > 0) entry.messageIds = ids;
  if (extra.note) entry.note = extra.note;
  return entry;
}

function messageIdsOf(charge: Pick<PendingCharge, "ref" | "messages">): number[] {
  return charge.messages?.map((m) => m.id) ?? [charge.ref];
}

/**
 * Writes the entries (an entry written already stays as it is) and adds the usage of those that
 * were new. Entries of amount 0 are not written: nothing changed the credit.
 */
export async function recordEntries(
  money: Pick<MoneyCollections, "ledger" | "usage">,
  records: readonly LedgerRecord[],
): Promise<void> {
  const written = records.filter((r) => r.entry.amountMicros !== 0);
  if (written.length === 0) return;
  const result = await money.ledger.bulkWrite(
    written.map(
      ({ entry }): AnyBulkWriteOperation<LedgerEntryDoc> => ({
        updateOne: { filter: { _id: entry._id }, update: { $setOnInsert: entry }, upsert: true },
      }),
    ),
    { ordered: false },
  );
  const fresh = Object.keys(result.upsertedIds ?? {}).map(Number);
  const sums = new Map<string, UsageDoc>();
  for (const index of fresh) {
    const record = written[index];
    if (!record) continue;
    for (const delta of record.usage ?? []) {
      const _id = `${record.entry.accountId}/${delta.day}/${delta.country}`;
      const row = sums.get(_id);
      if (row) {
        row.messages += delta.messages;
        row.parts += delta.parts;
        row.chargedMicros += delta.chargedMicros;
        row.refundedMicros += delta.refundedMicros;
      } else sums.set(_id, { _id, accountId: record.entry.accountId, ...delta });
    }
  }
  if (sums.size === 0) return;
  await money.usage.bulkWrite(
    [...sums.values()].map(
      ({ _id, accountId, day, country, messages, parts, chargedMicros, refundedMicros }) => ({
        updateOne: {
          filter: { _id },
          update: {
            $setOnInsert: { accountId, day, country },
            $inc: { messages, parts, chargedMicros, refundedMicros },
          },
          upsert: true,
        },
      }),
    ),
    { ordered: false },
  );
}

/** What a charged message adds to usage. */
export function chargedUsage(message: {
  createdAt: Date;
  country?: string | undefined;
  parts: number;
  amountMicros: number;
}): UsageDelta {
  return {
    day: utcDay(message.createdAt),
    country: countryOf(message.country),
    messages: 1,
    parts: message.parts,
    chargedMicros: message.amountMicros,
    refundedMicros: 0,
  };
}

/**
 * What a batch of charged messages adds to usage: one delta per day and country, summed in one
 * pass (a batch's messages share their day), nothing allocated per message.
 */
export function batchUsage(
  messages: readonly Pick<MessageDoc, "createdAt" | "country" | "parts" | "pricePerPartMicros">[],
): UsageDelta[] {
  const days = new Map<string, Map<string, UsageDelta>>();
  let lastTime = Number.NaN;
  let countries: Map<string, UsageDelta> | undefined;
  let day = "";
  for (const message of messages) {
    const time = message.createdAt.getTime();
    if (time !== lastTime || !countries) {
      lastTime = time;
      day = utcDay(message.createdAt);
      countries = days.get(day);
      if (!countries) {
        countries = new Map();
        days.set(day, countries);
      }
    }
    const country = countryOf(message.country);
    const amountMicros = message.parts * (message.pricePerPartMicros ?? 0);
    const delta = countries.get(country);
    if (delta) {
      delta.messages += 1;
      delta.parts += message.parts;
      delta.chargedMicros += amountMicros;
    } else
      countries.set(country, {
        day,
        country,
        messages: 1,
        parts: message.parts,
        chargedMicros: amountMicros,
        refundedMicros: 0,
      });
  }
  return [...days.values()].flatMap((countries) => [...countries.values()]);
}

/** What a refund of a message adds to usage: on the day and country it was charged for. */
export function refundedUsage(message: {
  createdAt: Date;
  country?: string | undefined;
  amountMicros: number;
}): UsageDelta {
  return {
    day: utcDay(message.createdAt),
    country: countryOf(message.country),
    messages: 0,
    parts: 0,
    chargedMicros: 0,
    refundedMicros: message.amountMicros,
  };
}

/** Spend by day, less `micros` for each day: the $inc of a refund on `spentByDay`. */
export function spendIncrements(byDay: ReadonlyMap<string, number>, sign: 1 | -1) {
  const inc: Record<string, number> = {};
  for (const [day, micros] of byDay) if (micros !== 0) inc[`spentByDay.${day}`] = sign * micros;
  return inc;
}

export async function ensureLedgerIndexes(money: Pick<MoneyCollections, "ledger">): Promise<void> {
  // The ledger's pages: an account's entries in time order.
  await money.ledger.createIndex({ accountId: 1, time: 1, _id: 1 }, { name: "account_time" });
}
