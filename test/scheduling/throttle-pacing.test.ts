/**
 * Pure pacing against an SMSC's throttling, on a clock of our own: the pause after throttling
 * answers (one per episode, short, starting over on an acceptance) and the per-second cap that
 * keeps a bind within `tps` in any second, as the SMSC counts it.
 */
import { describe, expect, it } from "vitest";
import { SlidingLimit, TokenBucket } from "../../src/scheduling/throttle.ts";
import { ThrottleBackoff } from "../../src/smpp/throttle-backoff.ts";

describe("the throttling pause", () => {
  it("a burst of in-flight throttling answers begins one pause, not one doubling per answer", () => {
    let now = 0;
    const backoff = new ThrottleBackoff(1_000, () => now);
    // 100 parts submitted at 0-99 ms (a window of 100); the SMSC throttles the last 60 of them.
    now = 120;
    expect(backoff.throttled(40, 100)).toBe(100);
    for (let sentAt = 41; sentAt < 100; sentAt++) {
      now++;
      expect(backoff.throttled(sentAt, 100)).toBe(0);
    }
    expect(backoff.pauses).toBe(1);
    expect(backoff.lastPauseMs).toBe(100);
    expect(backoff.pausedUntil).toBe(220);
  });

  it("doubles only for parts submitted after the last pause began, up to its cap", () => {
    let now = 0;
    const backoff = new ThrottleBackoff(1_000, () => now);
    const lengths: number[] = [];
    for (let episode = 0; episode < 8; episode++) {
      const sentAt = now;
      now += 5;
      lengths.push(backoff.throttled(sentAt, 100));
      now = backoff.pausedUntil;
    }
    expect(lengths).toEqual([100, 200, 400, 800, 1_000, 1_000, 1_000, 1_000]);
    expect(backoff.pauses).toBe(8);
  });

  it("starts short again once a part submitted after the pause is accepted", () => {
    let now = 0;
    const backoff = new ThrottleBackoff(1_000, () => now);
    now = 10;
    backoff.throttled(0, 5);
    now = 20;
    backoff.throttled(15, 5);
    expect(backoff.lastPauseMs).toBe(10);
    backoff.accepted(12); // submitted before that pause began: says nothing about it
    now = 40;
    expect(backoff.throttled(35, 5)).toBe(20);
    backoff.accepted(41);
    now = 80;
    expect(backoff.throttled(70, 5)).toBe(5);
    expect(backoff.inARow).toBe(1);
    backoff.reset();
    expect(backoff.pausedUntil).toBe(Number.NEGATIVE_INFINITY);
  });
});

/** The most of `times` (sorted) in any half-open stretch of `periodMs`. */
function mostInAnyPeriod(times: number[], periodMs: number): number {
  let most = 0;
  let first = 0;
  for (let last = 0; last < times.length; last++) {
    while ((times[last] as number) - (times[first] as number) >= periodMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/** Sends as soon as the limits allow, woken late by 0-7 ms each time, with idle gaps. */
function send(
  seconds: number,
  clock: { now: number },
  allowed: () => number,
  sent: () => void,
): number[] {
  const times: number[] = [];
  let step = 0;
  while (clock.now < seconds * 1_000) {
    step++;
    const wait = allowed();
    if (wait > 0) {
      clock.now += wait + ((step * 7) % 8);
      continue;
    }
    sent();
    times.push(clock.now);
    if (times.length % 500 === 0) clock.now += 300; // the claims ran dry for a moment
  }
  return times;
}

describe("the per-second cap", () => {
  it("keeps a bind within its TPS in any second, where its token bucket alone goes over", () => {
    const tps = 200;
    const first = { now: 0 };
    const bucketOnly = new TokenBucket(tps, tps / 20, () => first.now);
    const alone = send(
      10,
      first,
      () => bucketOnly.msUntil(1),
      () => bucketOnly.take(1),
    );
    expect(mostInAnyPeriod(alone, 1_000)).toBeGreaterThan(tps);

    const second = { now: 0 };
    const bucket = new TokenBucket(tps, tps / 20, () => second.now);
    const perSecond = new SlidingLimit(tps, 1_000, () => second.now);
    const capped = send(
      10,
      second,
      () => Math.max(bucket.msUntil(1), perSecond.msUntilFree()),
      () => {
        bucket.take(1);
        perSecond.record();
      },
    );
    expect(mostInAnyPeriod(capped, 1_000)).toBe(tps);
    // and it still carries its rate: 10 s with idle gaps, about as many as the bucket alone
    expect(capped.length).toBeGreaterThan(0.95 * alone.length);
  });

  it("says how long until the oldest event of the last period leaves it", () => {
    let now = 0;
    const limit = new SlidingLimit(3, 1_000, () => now);
    for (const at of [0, 100, 200]) {
      now = at;
      expect(limit.msUntilFree()).toBe(0);
      limit.record();
    }
    now = 250;
    expect(limit.msUntilFree()).toBe(750);
    now = 1_000;
    expect(limit.msUntilFree()).toBe(0);
    limit.record();
    expect(limit.msUntilFree()).toBe(100);
  });
});
