/** The account's ledger, a page at a time, oldest first (time, then id: a stable order). */
import type { Collection } from "mongodb";
import type { LedgerEntryDoc } from "../store/ledger.ts";

/** Where the next page starts: the last entry's time (ms) and `_id`. */
export type LedgerCursor = [number, string];

export async function findLedgerPage(
  ledger: Collection<LedgerEntryDoc>,
  accountId: string,
  range: { since?: Date; until?: Date },
  after: LedgerCursor | undefined,
  limit: number,
  options: { maxTimeMS?: number } = {},
): Promise<LedgerEntryDoc[]> {
  const time: Record<string, Date> = {};
  if (range.since) time.$gte = range.since;
  if (range.until) time.$lt = range.until;
  const filter: Record<string, unknown> = { accountId };
  if (Object.keys(time).length > 0) filter.time = time;
  if (after) {
    const at = new Date(after[0]);
    filter.$or = [{ time: { $gt: at } }, { time: at, _id: { $gt: after[1] } }];
  }
  return ledger.find(filter, { sort: { time: 1, _id: 1 }, limit: limit + 1, ...options }).toArray();
}
