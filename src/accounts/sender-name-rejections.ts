import type { Collection, Db } from "mongodb";

// Why the operator rejected a sender name, shown on the account's dashboard for 30 days (docs/
// design.md "Accounts, API keys and the operator console"): the name itself is removed as before,
// so the account may ask for it again.

export const REJECTION_SHOWN_DAYS = 30;

export interface SenderNameRejection {
  accountId: string;
  name: string;
  reason: string;
  at: Date;
}

export function rejectionsCollection(db: Db): Collection<SenderNameRejection> {
  return db.collection<SenderNameRejection>("sender_name_rejections");
}

export async function ensureRejectionIndexes(
  rejections: Collection<SenderNameRejection>,
): Promise<void> {
  await Promise.all([
    rejections.createIndex(
      { at: 1 },
      { name: "shown_for", expireAfterSeconds: REJECTION_SHOWN_DAYS * 24 * 3600 },
    ),
    rejections.createIndex({ accountId: 1, at: -1 }, { name: "account_recent" }),
  ]);
}

/** The account's rejections of the last 30 days, newest first (the TTL index may lag). */
export function recentRejections(
  rejections: Collection<SenderNameRejection>,
  accountId: string,
  now: Date,
): Promise<SenderNameRejection[]> {
  const since = new Date(now.getTime() - REJECTION_SHOWN_DAYS * 24 * 3600_000);
  return rejections
    .find({ accountId, at: { $gt: since } }, { projection: { _id: 0 } })
    .sort({ at: -1 })
    .limit(100)
    .toArray();
}
