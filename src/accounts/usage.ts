import type { Collection } from "mongodb";
import type { MessageDoc } from "../store/documents.ts";

// Usage per account and day for the operator's console: messages, parts, what they were charged
// and what was given back (withdrawn messages). Read from the messages themselves over the last
// DAYS days, at most MAX_READ of them: a view for the operator, not the books (the ledger of
// docs/design.md "Money" is not built yet).

export const DAYS = 14;
const MAX_READ = 50_000;

export interface UsageRow {
  account: string;
  day: string;
  messages: number;
  parts: number;
  charged: number;
  refunded: number;
}

export async function dailyUsage(
  messages: Collection<MessageDoc>,
  accountId: string | undefined,
  now: Date,
  pricePerPartMicros = 1_000_000,
): Promise<UsageRow[]> {
  const since = new Date(now.getTime() - DAYS * 24 * 3600_000);
  const found = await messages
    .find(
      { ...(accountId && { accountId }), createdAt: { $gte: since } },
      {
        projection: { accountId: 1, createdAt: 1, parts: 1, pricePerPartMicros: 1, withdrawal: 1 },
        limit: MAX_READ,
      },
    )
    .toArray();
  const rows = new Map<string, UsageRow>();
  for (const m of found) {
    const day = m.createdAt.toISOString().slice(0, 10);
    const key = `${m.accountId}\u0000${day}`;
    const row = rows.get(key) ?? {
      account: m.accountId,
      day,
      messages: 0,
      parts: 0,
      charged: 0,
      refunded: 0,
    };
    const price = (m.parts * (m.pricePerPartMicros ?? pricePerPartMicros)) / 1_000_000;
    row.messages += 1;
    row.parts += m.parts;
    row.charged += price;
    if ((m as { withdrawal?: number }).withdrawal !== undefined) row.refunded += price;
    rows.set(key, row);
  }
  return [...rows.values()].sort(
    (a, b) => b.day.localeCompare(a.day) || a.account.localeCompare(b.account),
  );
}
