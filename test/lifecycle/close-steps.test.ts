/** Closing never waits past its deadline: a step that hangs is logged and left behind. */
import { describe, expect, it } from "vitest";
import { runCloseSteps } from "../../src/lifecycle/close-steps.ts";

function recorder() {
  const warnings: { fields: object; message: string }[] = [];
  return {
    warnings,
    logger: { warn: (fields: object, message: string) => warnings.push({ fields, message }) },
  };
}

describe("closing steps", () => {
  it("runs every step in order when each finishes in time", async () => {
    const ran: string[] = [];
    const { warnings, logger } = recorder();
    await runCloseSteps(
      ["a", "b", "c"].map((name) => ({ name, run: async () => void ran.push(name) })),
      Date.now() + 5_000,
      logger,
    );
    expect(ran).toEqual(["a", "b", "c"]);
    expect(warnings).toEqual([]);
  });

  it("leaves a step that never finishes at the deadline and runs the next ones", async () => {
    const ran: string[] = [];
    const { warnings, logger } = recorder();
    const started = Date.now();
    await runCloseSteps(
      [
        { name: "hangs", run: () => new Promise<void>(() => undefined) },
        { name: "after", run: async () => void ran.push("after") },
      ],
      started + 200,
      logger,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(ran).toEqual(["after"]);
    expect(warnings).toEqual([
      { fields: { step: "hangs" }, message: expect.stringContaining("did not finish in time") },
    ]);
  });

  it("waits for a step without a deadline (one past the timers' limit is not taken as now)", async () => {
    const ran: string[] = [];
    const { warnings, logger } = recorder();
    await runCloseSteps(
      [
        {
          name: "slow",
          run: () =>
            new Promise<void>((resolve) => setTimeout(() => resolve(void ran.push("slow")), 50)),
        },
      ],
      Number.POSITIVE_INFINITY,
      logger,
    );
    expect(ran).toEqual(["slow"]);
    expect(warnings).toEqual([]);
  });

  it("passes on the error of a step that fails in time", async () => {
    const { logger } = recorder();
    await expect(
      runCloseSteps(
        [{ name: "fails", run: async () => Promise.reject(new Error("write failed")) }],
        Date.now() + 5_000,
        logger,
      ),
    ).rejects.toThrow("write failed");
  });

  it("logs, rather than leaves unhandled, the failure of a step left behind", async () => {
    const { warnings, logger } = recorder();
    let fail: (error: Error) => void = () => undefined;
    await runCloseSteps(
      [{ name: "late", run: () => new Promise<void>((_, reject) => (fail = reject)) }],
      Date.now() + 50,
      logger,
    );
    fail(new Error("gave up"));
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings.map((w) => w.message)).toEqual([
      expect.stringContaining("did not finish in time"),
      "closing: a late step failed",
    ]);
  });
});
