/**
 * What a batch adds to usage (docs/design.md "Money", "Usage"): a row per account, UTC day and
 * country, `ZZ` for numbers without one; a batch's rows are what its messages would add one by
 * one, summed.
 */
import { describe, expect, it } from "vitest";
import { batchUsage, chargedUsage, type UsageDelta } from "../../src/store/ledger.ts";

const message = (createdAt: string, country: string | undefined, parts: number) => ({
  createdAt: new Date(createdAt),
  country,
  parts,
  pricePerPartMicros: 45_000,
});

/** Each message's own delta, summed per day and country: the rule batchUsage must keep. */
function oneByOne(messages: ReturnType<typeof message>[]): UsageDelta[] {
  const sums = new Map<string, UsageDelta>();
  for (const m of messages) {
    const delta = chargedUsage({ ...m, amountMicros: m.parts * m.pricePerPartMicros });
    const key = `${delta.day}/${delta.country}`;
    const sum = sums.get(key);
    if (!sum) sums.set(key, delta);
    else {
      sum.messages += delta.messages;
      sum.parts += delta.parts;
      sum.chargedMicros += delta.chargedMicros;
    }
  }
  return [...sums.values()];
}

const byKey = (rows: UsageDelta[]) =>
  [...rows].sort((a, b) => `${a.day}${a.country}`.localeCompare(`${b.day}${b.country}`));

describe("a batch's usage", () => {
  it("is one row per day and country, the sums of its messages", () => {
    const messages = [
      message("2026-11-01T23:59:59.999Z", "DE", 1),
      message("2026-11-01T23:59:59.999Z", "FR", 3),
      message("2026-11-01T23:59:59.999Z", "DE", 2),
      message("2026-11-02T00:00:00.000Z", "DE", 1),
      message("2026-11-02T00:00:00.000Z", undefined, 1),
    ];
    const rows = batchUsage(messages);
    expect(byKey(rows)).toEqual(byKey(oneByOne(messages)));
    expect(byKey(rows)).toEqual([
      {
        day: "2026-11-01",
        country: "DE",
        messages: 2,
        parts: 3,
        chargedMicros: 135_000,
        refundedMicros: 0,
      },
      {
        day: "2026-11-01",
        country: "FR",
        messages: 1,
        parts: 3,
        chargedMicros: 135_000,
        refundedMicros: 0,
      },
      {
        day: "2026-11-02",
        country: "DE",
        messages: 1,
        parts: 1,
        chargedMicros: 45_000,
        refundedMicros: 0,
      },
      {
        day: "2026-11-02",
        country: "ZZ",
        messages: 1,
        parts: 1,
        chargedMicros: 45_000,
        refundedMicros: 0,
      },
    ]);
  });

  it("is nothing for no messages", () => {
    expect(batchUsage([])).toEqual([]);
  });
});
