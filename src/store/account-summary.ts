import type { CountDocumentsOptions, FindOptions } from "mongodb";
import { STATUS_NAMES, type StatusName } from "../domain/message-status.ts";
import type { Store } from "./database.ts";

// What the dashboard's overview shows beside the services' lists: the account's credit and how
// many of its recent messages are at each status. Neither is a rule of any service (no RPC of an
// account reads them), so they are read here, each through an index that starts with the account.

/** The account's credit in micro-units, or undefined when there is no such account. */
export async function creditOf(
  store: Store,
  accountId: string,
  options: FindOptions = {},
): Promise<number | undefined> {
  const account = await store.accounts.findOne(
    { _id: accountId },
    { ...options, projection: { creditMicros: 1 } },
  );
  return account?.creditMicros;
}

/** A count that reached the cap: the real number is at least this. */
export interface StatusCount {
  status: StatusName;
  count: number;
  capped: boolean;
}

/**
 * How many of the account's messages created since `since` are at each status: one count per
 * status, each a range of the (account, status, createdAt) listing index. Each count stops at
 * `cap`, so an account sending millions a day still gets its overview in bounded time.
 */
export async function recentStatusCounts(
  store: Store,
  accountId: string,
  since: Date,
  cap: number,
  options: CountDocumentsOptions = {},
): Promise<StatusCount[]> {
  return Promise.all(
    STATUS_NAMES.map(async (status) => {
      const count = await store.messages.countDocuments(
        { accountId, status, createdAt: { $gte: since } },
        // No hint: the emulator's aggregate refuses one, and the planner has a single index
        // whose prefix is exactly these equalities and this range.
        { ...options, limit: cap },
      );
      return { status, count, capped: count >= cap };
    }),
  );
}
