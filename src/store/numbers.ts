import { type Collection, type Db, MongoServerError } from "mongodb";

/**
 * Inbound numbers (docs/design.md "Two-way messaging": "Numbers"): the operator assigns each long code
 * (E.164, `+` and digits) or short code (3 to 8 digits) to at most one account. Mobile-originated
 * messages to a number go to its account; the account may send `from` it.
 *
 * One document per number, keyed by the number as written in the design's form, so "who owns
 * this number" is one read by `_id` and "one owner at most" is the primary key.
 */
export interface NumberDoc {
  /** The number: `+` and 8 to 15 digits, or a short code of 3 to 8 digits. */
  _id: string;
  accountId: string;
  assignedAt: Date;
}

/** The number belongs to another account: release it first. */
export class NumberTaken extends Error {
  constructor(
    readonly number: string,
    readonly ownerId: string,
  ) {
    super(`number ${number} is assigned to another account`);
    this.name = "NumberTaken";
  }
}

export function numbersCollection(db: Db): Collection<NumberDoc> {
  return db.collection<NumberDoc>("numbers");
}

/** An account's numbers (the `_id` index answers the rest). */
export async function ensureNumberIndexes(db: Db): Promise<void> {
  await numbersCollection(db).createIndex({ accountId: 1, _id: 1 }, { name: "account_numbers" });
}

/**
 * Assigns `number` to `accountId`; assigning it again to the same account changes nothing (its
 * first `assignedAt` stays). Throws NumberTaken when another account owns it.
 */
export async function assignNumber(
  db: Db,
  accountId: string,
  number: string,
  now: Date = new Date(),
): Promise<NumberDoc> {
  const numbers = numbersCollection(db);
  for (let attempt = 0; ; attempt++) {
    try {
      const doc = await numbers.findOneAndUpdate(
        { _id: number },
        { $setOnInsert: { accountId, assignedAt: now } },
        { upsert: true, returnDocument: "after" },
      );
      if (!doc) throw new Error(`assigning ${number} returned no document`);
      if (doc.accountId !== accountId) throw new NumberTaken(number, doc.accountId);
      return doc;
    } catch (error) {
      // Two first assignments raced to insert it: the loser reads the winner's.
      if (!(error instanceof MongoServerError && error.code === 11000) || attempt > 0) throw error;
    }
  }
}

/** Releases `number` (of `accountId` only, when given); false when it was not assigned (to it). */
export async function releaseNumber(db: Db, number: string, accountId?: string): Promise<boolean> {
  const filter = accountId === undefined ? { _id: number } : { _id: number, accountId };
  const result = await numbersCollection(db).deleteOne(filter);
  return result.deletedCount === 1;
}

/** The numbers of one account, or of every account, in number order. */
export function listNumbers(db: Db, accountId?: string): Promise<NumberDoc[]> {
  const filter = accountId === undefined ? {} : { accountId };
  return numbersCollection(db)
    .find(filter, { sort: { _id: 1 } })
    .toArray();
}

/** The account that owns `number`, or undefined. */
export async function ownerOfNumber(db: Db, number: string): Promise<string | undefined> {
  const doc = await numbersCollection(db).findOne(
    { _id: number },
    { projection: { accountId: 1 } },
  );
  return doc?.accountId;
}

/** Which of `numbers` are assigned, and to whom, in one read. */
export async function ownersOfNumbers(
  db: Db,
  numbers: readonly string[],
): Promise<Map<string, string>> {
  const owners = new Map<string, string>();
  if (numbers.length === 0) return owners;
  const docs = await numbersCollection(db)
    .find({ _id: { $in: [...new Set(numbers)] } }, { projection: { accountId: 1 } })
    .toArray();
  for (const doc of docs) owners.set(doc._id, doc.accountId);
  return owners;
}
