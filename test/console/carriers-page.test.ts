/**
 * The carriers page's rows (src/console/carriers-page.ts) from what an instance writes: one row
 * per carrier of a plan, with its circuit; what a carrier's kind does not report (a simulator's
 * binds, window and counts) shown as `—`, never as a guess. The SMPP adapter's own report is shown
 * in Chromium by test/console/console-browser.test.ts.
 */
import { describe, expect, it } from "vitest";
import { carrierRows } from "../../src/console/carriers-page.ts";

const smpp = (inUse: number) => ({
  state: "partly bound",
  binds: [
    { bind: 1, state: "bound" },
    { bind: 2, state: "unbound" },
  ],
  window: { size: 20, inUse },
  last15Minutes: { submitted: 40, refused: 3, throttled: 1 },
});

describe("the carriers page's rows", () => {
  it("shows each carrier of a plan with its circuit, window and last 15 minutes", () => {
    const rows = carrierRows({
      name: "carriers",
      state: "bound",
      carriers: [
        { name: "primary", ...smpp(7), circuit: "open", takesWork: false },
        { name: "backup", state: "bound", circuit: "closed", takesWork: true },
      ],
    });
    expect(rows).toEqual([
      {
        name: "primary",
        state: "partly bound",
        binds: "#1 bound, #2 unbound",
        circuit: "open",
        window: "7 / 20",
        submitted: "40",
        refused: "3",
        throttled: "1",
      },
      {
        name: "backup",
        state: "bound",
        binds: "—",
        circuit: "closed",
        window: "—",
        submitted: "—",
        refused: "—",
        throttled: "—",
      },
    ]);
  });

  it("shows one carrier alone without a circuit (failover needs a plan)", () => {
    expect(carrierRows({ name: "smpp", ...smpp(0) })).toEqual([
      expect.objectContaining({ name: "smpp", circuit: "—", window: "0 / 20", submitted: "40" }),
    ]);
  });
});
