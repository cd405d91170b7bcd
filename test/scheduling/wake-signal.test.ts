import { describe, expect, it } from "vitest";
import { WakeSignal } from "../../src/scheduling/wake-signal.ts";

describe("the wake-up of a work loop", () => {
  it("keeps a wake-up asked for while the loop was busy, and consumes it once", async () => {
    const signal = new WakeSignal();
    signal.wake();
    signal.wake();

    expect(await signal.next()).toBe(true);
    const second = signal.next();
    signal.release();
    expect(await second).toBe(false);
  });

  it("wakes a waiting loop", async () => {
    const signal = new WakeSignal();
    const waiting = signal.next();
    signal.wake();
    expect(await waiting).toBe(true);
  });

  it("lets a waiting loop go without work when released, to check whether it should stop", async () => {
    const signal = new WakeSignal();
    const waiting = signal.next();
    signal.release();
    expect(await waiting).toBe(false);
  });
});
