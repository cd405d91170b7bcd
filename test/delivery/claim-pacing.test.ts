/**
 * How far the delivery worker claims ahead of its carrier (delivery/claim-pacing.ts): newly due
 * work (another account, or the account's next batch) waits behind the parts claimed beyond the
 * window, so they are kept to what keeps the carrier fed.
 */
import { describe, expect, it } from "vitest";
import { ClaimPacing } from "../../src/delivery/claim-pacing.ts";

const claimedAhead = (pacing: ClaimPacing) => pacing.claimed.size - pacing.window.size;

describe("parts claimed ahead of the carrier", () => {
  it("are a quarter of the window of a carrier without a throughput limit, at least 100", () => {
    // The simulator's window: newly due work waited behind 500 more parts before.
    expect(claimedAhead(new ClaimPacing({ window: 500 }))).toBe(125);
    expect(claimedAhead(new ClaimPacing({ window: 2000 }))).toBe(500);
    // One SMPP bind (window 10) and four: the floor.
    expect(claimedAhead(new ClaimPacing({ window: 10 }))).toBe(100);
    expect(claimedAhead(new ClaimPacing({ window: 40 }))).toBe(100);
  });

  it("are a tenth of a second of a carrier's throughput limit, no more than its window", () => {
    expect(claimedAhead(new ClaimPacing({ window: 10, partsPerSecond: 50 }))).toBe(5);
    expect(claimedAhead(new ClaimPacing({ window: 10, partsPerSecond: 1000 }))).toBe(10);
  });

  it("are what the worker is told when it is told", () => {
    expect(claimedAhead(new ClaimPacing({ window: 500 }, 0))).toBe(0);
    expect(claimedAhead(new ClaimPacing({ window: 500 }, 300))).toBe(300);
  });

  it("leave a round room for a long message, and wait for a worthwhile budget", () => {
    // An eighth of the parts claimed without a limit: 625 / 8.
    expect(new ClaimPacing({ window: 500 }).roundMinimum).toBe(78);
    expect(new ClaimPacing({ window: 10 }).roundMinimum).toBe(13);
  });
});
