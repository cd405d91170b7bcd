/** The simulator's alarm for its receipts' due times (pure logic on vitest's clock). */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DueAlarm } from "../../src/delivery/due-alarm.ts";

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("due alarm", () => {
  it("rings at each due time in turn, whatever order they were added in", () => {
    const rings: number[] = [];
    const alarm = new DueAlarm(() => rings.push(Date.now()));
    alarm.add(1_000_300);
    alarm.add(1_000_100);
    alarm.add(1_000_200);
    alarm.add(1_000_200);
    vi.advanceTimersByTime(1_000);
    expect(rings).toEqual([1_000_100, 1_000_200, 1_000_300]);
    expect(alarm.size).toBe(0);
  });

  it("rings once for times that have passed together", () => {
    let rings = 0;
    const alarm = new DueAlarm(() => rings++);
    alarm.add(999_000);
    alarm.add(999_500);
    vi.advanceTimersByTime(1);
    expect(rings).toBe(1);
    alarm.add(1_000_050);
    vi.advanceTimersByTime(100);
    expect(rings).toBe(2);
  });

  it("rings no more once cleared", () => {
    let rings = 0;
    const alarm = new DueAlarm(() => rings++);
    alarm.add(1_000_100);
    alarm.add(1_000_200);
    alarm.clear();
    vi.advanceTimersByTime(1_000);
    expect(rings).toBe(0);
  });

  it("hands over the items of the times that came due, and those only", () => {
    const rings: string[][] = [];
    const alarm = new DueAlarm<string>((items) => rings.push(items));
    alarm.add(1_000_100, ["a"]);
    alarm.add(1_000_100, ["b"]);
    alarm.add(1_000_300, ["c"]);
    alarm.add(1_000_200);
    vi.advanceTimersByTime(250);
    expect(rings).toEqual([["a", "b"], []]);
    vi.advanceTimersByTime(100);
    expect(rings).toEqual([["a", "b"], [], ["c"]]);
  });
});
