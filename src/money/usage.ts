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
