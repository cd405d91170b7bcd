/**
 * The carriers page's counts of the last 15 minutes (src/delivery/minute-counts.ts): one bucket
 * per minute, summed when read; what is older than the span is forgotten, also when its slot is
 * taken again.
 */
import { describe, expect, it } from "vitest";
import { MinuteCounts } from "../../src/delivery/minute-counts.ts";

const MINUTE = 60_000;

describe("counts of the last 15 minutes", () => {
  it("sums this minute and the 14 before it, and forgets what is older", () => {
    let now = 1_000 * MINUTE + 30_000;
    const counts = new MinuteCounts(["submitted", "refused"], 15, () => now);
    counts.add("submitted", 3);
    counts.add("refused");
    now += 14 * MINUTE;
    counts.add("submitted");
    expect(counts.sums()).toEqual({ submitted: 4, refused: 1 });
    // The first minute is 15 minutes old now: out.
    now += MINUTE;
    expect(counts.sums()).toEqual({ submitted: 1, refused: 0 });
  });

  it("starts a slot again when its minute comes round, for every name", () => {
    let now = 0;
    const counts = new MinuteCounts(["submitted", "refused"], 15, () => now);
    counts.add("submitted", 5);
    counts.add("refused", 2);
    now = 15 * MINUTE;
    counts.add("submitted");
    expect(counts.sums()).toEqual({ submitted: 1, refused: 0 });
    // Long silent: nothing left.
    now = 100 * MINUTE;
    expect(counts.sums()).toEqual({ submitted: 0, refused: 0 });
  });
});
