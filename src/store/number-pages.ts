import type { Db, FindOptions } from "mongodb";
import { type NumberDoc, numbersCollection } from "./numbers.ts";

/**
 * One page of assigned numbers in number order (of one account when given), after the number
 * `after`; `limit + 1` read to tell whether more follow. The `_id` index, or the account's.
 */
export function findNumberPage(
  db: Db,
  accountId: string | undefined,
  after: string | undefined,
  limit: number,
  options: FindOptions = {},
): Promise<NumberDoc[]> {
  const query: Record<string, unknown> = {};
  if (accountId !== undefined) query.accountId = accountId;
  if (after !== undefined) query._id = { $gt: after };
  return numbersCollection(db)
    .find(query, { ...options, sort: { _id: 1 }, limit: limit + 1 })
    .toArray();
}
