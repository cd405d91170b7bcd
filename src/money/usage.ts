/**
 * Usage as the account reads it (docs/design.md "Money", "Usage"): summed from the rows kept per
 * account, day and country (store/ledger.ts), never from messages, so a month costs at most 31
 * rows per country whatever the messages.
 */
import type { Collection } from "mongodb";
import type { UsageDoc } from "../store/ledger.ts";

export type UsageGrouping = "day" | "country";

export interface UsageTotals {
  day?: string;
  country?: string;
  messages: number;
  parts: number;
  chargedMicros: number;
  refundedMicros: number;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A UTC date `YYYY-MM-DD` that exists, or undefined. */
export function validDate(text: string): string | undefined {
  if (!DATE.test(text)) return undefined;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(text) ? text : undefined;
}

/** The account's usage from `start` (included) to `end` (excluded), grouped as asked, sorted. */
export async function readUsage(
  usage: Collection<UsageDoc>,
  accountId: string,
  start: string,
  end: string,
  groupBy: readonly UsageGrouping[],
  options: { maxTimeMS?: number } = {},
): Promise<UsageTotals[]> {
  const rows = await usage
    .find({ accountId, day: { $gte: start, $lt: end } }, { projection: { _id: 0 }, ...options })
    .toArray();
  const byDay = groupBy.includes("day");
  const byCountry = groupBy.includes("country");
  const sums = new Map<string, UsageTotals>();
  for (const row of rows) {
    const key = `${byDay ? row.day : ""}/${byCountry ? row.country : ""}`;
    let sum = sums.get(key);
    if (!sum) {
      sum = {
        ...(byDay && { day: row.day }),
        ...(byCountry && { country: row.country }),
        messages: 0,
        parts: 0,
        chargedMicros: 0,
        refundedMicros: 0,
      };
      sums.set(key, sum);
    }
    sum.messages += row.messages;
    sum.parts += row.parts;
    sum.chargedMicros += row.chargedMicros;
    sum.refundedMicros += row.refundedMicros;
  }
  // With no grouping the range is one row, even an empty one.
  if (!byDay && !byCountry && sums.size === 0)
    sums.set("/", { messages: 0, parts: 0, chargedMicros: 0, refundedMicros: 0 });
  return [...sums.values()].sort(
    (a, b) =>
      (a.day ?? "").localeCompare(b.day ?? "") || (a.country ?? "").localeCompare(b.country ?? ""),
  );
}

/** One account's usage of one day, every country summed: a row of the operator's console. */
export interface AccountDayUsage {
  accountId: string;
  day: string;
  messages: number;
  parts: number;
  chargedMicros: number;
  refundedMicros: number;
}

/** Where a page of account days ends: the next page starts after it. */
export interface AccountDayCursor {
  day: string;
  accountId: string;
}

/**
 * Every account's usage (or one account's) per day from `since` (included) to `until` (excluded),
 * newest day first, then by account; `pageSize` account days at a time, after `after`. Read from
 * the usage rows in index order (`day_account`, or `account_day` for one account), summing an
 * account day's countries as they come, so a page reads its own rows and one more.
 */
export async function listAccountDays(
  usage: Collection<UsageDoc>,
  filter: { accountId?: string; since: string; until: string },
  pageSize: number,
  after?: AccountDayCursor,
): Promise<{ rows: AccountDayUsage[]; next?: AccountDayCursor }> {
  const query: Record<string, unknown> = {
    day: { $gte: filter.since, $lt: filter.until },
    ...(filter.accountId && { accountId: filter.accountId }),
  };
  if (after) {
    query.$or = [
      { day: { $lt: after.day } },
      { day: after.day, accountId: { $gt: after.accountId } },
    ];
  }
  const found = usage
    .find(query, { projection: { _id: 0 } })
    .sort({ day: -1, accountId: 1 })
    .batchSize(500);
  const rows: AccountDayUsage[] = [];
  let more = false;
  try {
    for await (const row of found) {
      const last = rows.at(-1);
      if (last && last.day === row.day && last.accountId === row.accountId) {
        last.messages += row.messages;
        last.parts += row.parts;
        last.chargedMicros += row.chargedMicros;
        last.refundedMicros += row.refundedMicros;
        continue;
      }
      if (rows.length === pageSize) {
        more = true;
        break;
      }
      rows.push({
        accountId: row.accountId,
        day: row.day,
        messages: row.messages,
        parts: row.parts,
        chargedMicros: row.chargedMicros,
        refundedMicros: row.refundedMicros,
      });
    }
  } finally {
    await found.close();
  }
  const last = rows.at(-1);
  return more && last ? { rows, next: { day: last.day, accountId: last.accountId } } : { rows };
}
