/** Pure rules of the delivery engine: class ranks with a bounded wait, and the token bucket. */
import { describe, expect, it } from "vitest";
import { deliveryClass, deliveryRank, HEAD_START_MS } from "../../src/domain/delivery-priority.ts";
import { TokenBucket, Window } from "../../src/scheduling/throttle.ts";

describe("delivery classes and ranks", () => {
  it("OTP is a sender name of purpose OTP, in a batch or not; otherwise single or batch", () => {
    const otp = new Set(["Verify"]);
    expect(deliveryClass("Verify", otp, false)).toBe("otp");
    expect(deliveryClass("Verify", otp, true)).toBe("otp");
    expect(deliveryClass("Shop", otp, false)).toBe("single");
    expect(deliveryClass("Shop", otp, true)).toBe("batch");
  });

  it("accepted at the same time: OTP before single before batch", () => {
    const at = new Date("2026-11-23T12:00:00Z");
    const [otp, single, batch] = (["otp", "single", "batch"] as const).map((c) =>
      deliveryRank(at, c).getTime(),
    );
    expect(otp).toBeLessThan(single as number);
    expect(single).toBeLessThan(batch as number);
  });

  it("no class starves: a batch message goes before any OTP accepted more than the head start after it", () => {
    const batchAt = new Date("2026-11-23T12:00:00Z");
    const later = (ms: number) => new Date(batchAt.getTime() + ms);
    const batch = deliveryRank(batchAt, "batch").getTime();
    expect(deliveryRank(later(HEAD_START_MS.otp - 1), "otp").getTime()).toBeLessThan(batch);
    expect(deliveryRank(later(HEAD_START_MS.otp + 1), "otp").getTime()).toBeGreaterThan(batch);
    expect(deliveryRank(later(HEAD_START_MS.single + 1), "single").getTime()).toBeGreaterThan(
      batch,
    );
  });
});

describe("token bucket", () => {
  it("gives its rate per second, saves up at most its capacity, and can go into debt", () => {
    let now = 0;
    const bucket = new TokenBucket(100, 10, () => now);
    expect(bucket.available()).toBe(10);
    bucket.take(25);
    expect(bucket.available()).toBe(0);
    expect(bucket.msUntil(1)).toBe(160); // 15 owed plus 1, at 100/s
    now += 160;
    expect(bucket.available()).toBe(1);
    now += 10_000;
    expect(bucket.available()).toBe(10);
  });
});

describe("window", () => {
  it("grants waiting callers lower rank first, then in arrival order", async () => {
    const window = new Window(2);
    window.take(2);
    const granted: string[] = [];
    const wait = (name: string, rank: number) =>
      window.acquire(1, rank).then(() => granted.push(name));
    const all = Promise.all([wait("a3", 3), wait("b1", 1), wait("c0", 0), wait("d1", 1)]);
    for (let i = 0; i < 4; i++) window.give(1);
    await all;
    // A claim that has had no run yet (a newly claimed account or batch) goes first.
    expect(granted).toEqual(["c0", "b1", "d1", "a3"]);
  });

  it("counts parts in flight", () => {
    const window = new Window(20);
    window.take(15);
    expect(window.free).toBe(5);
    window.give(15);
    expect(window.free).toBe(20);
    window.give(1);
    expect(window.inUse).toBe(0);
  });
});
