/**
 * Quiet hours' rule (src/domain/quiet-hours.ts) at fixed moments, with the zones libphonenumber's
 * data gives real numbers (src/quiet-hours/zones.ts): one zone, several zones (US, Russia,
 * Australia) and none. Offsets and daylight saving come from ICU.
 */
import { describe, expect, it } from "vitest";
import {
  holdUntil,
  inWindow,
  localMinutes,
  quietHoursErrors,
} from "../../src/domain/quiet-hours.ts";
import { zonesOf } from "../../src/quiet-hours/zones.ts";

const NIGHT = { start: "21:00", end: "08:00" };
const at = (iso: string) => new Date(iso);

describe("the window", () => {
  it("runs from start up to end, across midnight when end comes first", () => {
    expect(inWindow(21 * 60, 21 * 60, 8 * 60)).toBe(true);
    expect(inWindow(7 * 60 + 59, 21 * 60, 8 * 60)).toBe(true);
    expect(inWindow(8 * 60, 21 * 60, 8 * 60)).toBe(false);
    expect(inWindow(13 * 60, 12 * 60, 14 * 60)).toBe(true);
    expect(inWindow(14 * 60, 12 * 60, 14 * 60)).toBe(false);
  });
  it("takes HH:MM only, start and end different", () => {
    expect(quietHoursErrors(NIGHT)).toEqual({});
    expect(Object.keys(quietHoursErrors({ start: "9:00", end: "24:00" }))).toEqual([
      "start",
      "end",
    ]);
    expect(quietHoursErrors({ start: "08:00", end: "08:00" })).toEqual({
      end: "end must differ from start",
    });
  });
});

describe("numbers of one zone", () => {
  it("New York at 22:30 local (EST) is held until 08:00 local", async () => {
    const zones = await zonesOf("+12125551234");
    expect(zones).toEqual(["America/New_York"]);
    // 2026-01-15 03:30 UTC = 22:30 EST (UTC-5) on the 14th.
    expect(holdUntil(at("2026-01-15T03:30:00Z"), zones, NIGHT)).toEqual(at("2026-01-15T13:00:00Z"));
    // 12:00 local: not held.
    expect(holdUntil(at("2026-01-15T17:00:00Z"), zones, NIGHT)).toBeUndefined();
  });
  it("daylight saving: 08:00 EDT is 12:00 UTC in July", async () => {
    const zones = await zonesOf("+12125551234");
    expect(holdUntil(at("2026-07-15T03:30:00Z"), zones, NIGHT)).toEqual(at("2026-07-15T12:00:00Z"));
  });
  it("Moscow and Vladivostok numbers each by their own zone", async () => {
    expect(await zonesOf("+79161234567")).toEqual(["Europe/Moscow"]);
    expect(await zonesOf("+74232123456")).toEqual(["Asia/Vladivostok"]);
    // 20:00 UTC: 23:00 in Moscow (UTC+3), 06:00 next day in Vladivostok (UTC+10).
    const due = at("2026-03-10T20:00:00Z");
    expect(holdUntil(due, ["Europe/Moscow"], NIGHT)).toEqual(at("2026-03-11T05:00:00Z"));
    expect(holdUntil(due, ["Asia/Vladivostok"], NIGHT)).toEqual(at("2026-03-10T22:00:00Z"));
  });
});

describe("numbers of several zones", () => {
  it("waits until it is outside quiet hours in all of them (Australia)", async () => {
    const zones = await zonesOf("+61812345678");
    expect(zones).toContain("Australia/Perth");
    expect(zones).toContain("Australia/Sydney");
    const hours = { start: "22:00", end: "07:00" };
    const due = at("2026-06-10T12:30:00Z"); // 22:30 Sydney, 20:30 Perth
    const hold = holdUntil(due, zones, hours);
    expect(hold).toBeDefined();
    for (const zone of zones) {
      expect(holdUntil(hold as Date, [zone], hours), zone).toBeUndefined();
    }
    // The earliest such moment: a minute before it, some zone was still quiet.
    const before = new Date((hold as Date).getTime() - 60_000);
    expect(zones.some((zone) => holdUntil(before, [zone], hours) !== undefined)).toBe(true);
  });
  it("a US toll-free number spans a dozen zones: the earliest moment daytime in all", async () => {
    const zones = await zonesOf("+18005550100");
    expect(zones.length).toBeGreaterThan(10);
    const hold = holdUntil(at("2026-01-15T03:30:00Z"), zones, NIGHT) as Date;
    for (const zone of zones) expect(holdUntil(hold, [zone], NIGHT), zone).toBeUndefined();
    const before = new Date(hold.getTime() - 60_000);
    expect(zones.some((zone) => holdUntil(before, [zone], NIGHT) !== undefined)).toBe(true);
  });
  it("zones with no common daytime within 24 h: the first zone decides", () => {
    // 18:00-08:00 quiet: Tokyo's day is 23:00-09:00 UTC, New York's (EST) 13:00-23:00 UTC.
    const hours = { start: "18:00", end: "08:00" };
    const hold = holdUntil(at("2026-01-15T10:00:00Z"), ["Asia/Tokyo", "America/New_York"], hours);
    expect(hold).toEqual(at("2026-01-15T23:00:00Z"));
    expect(localMinutes(hold as Date, "Asia/Tokyo")).toBe(8 * 60);
  });
});

describe("numbers of no zone", () => {
  it("the simulator's +999 numbers have no country: never held", async () => {
    expect(await zonesOf("+9990000001")).toEqual([]);
    expect(holdUntil(at("2026-01-15T03:30:00Z"), [], NIGHT)).toBeUndefined();
  });
});
