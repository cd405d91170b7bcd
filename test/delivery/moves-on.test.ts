/**
 * Which refused messages go to the next carrier of their route (issue 27 item 4, pure): only when
 * the carrier refused every part for a fault of its own (ESME_RSYSERR) and accepted none, now or
 * in a submission cut off earlier, and the route has another carrier. Everything else is recorded
 * (SEND_ERROR): a part accepted by one carrier is never submitted to another.
 */
import { describe, expect, it } from "vitest";
import { type Answered, movesOn } from "../../src/delivery/submission.ts";

const route = { name: "default", carriers: ["alpha", "beta"] };
const fault: Answered = {
  carrierIds: [],
  error: "submit_sm refused: ESME_RSYSERR (0x08)",
  carrierFault: true,
};

describe("movesOn", () => {
  it("moves a message every part of which the carrier refused for its own fault", () => {
    expect(movesOn("alpha", { route }, fault)).toBe("alpha");
  });

  it("records the refusal when a part was accepted", () => {
    expect(movesOn("alpha", { route }, { ...fault, carrierIds: ["a1"] })).toBeUndefined();
  });

  it("records the refusal when the carrier accepted a part in a submission cut off before", () => {
    expect(movesOn("alpha", { route, carrier: "alpha" }, fault)).toBeUndefined();
  });

  it("records a refusal that blames the message", () => {
    const refused: Answered = {
      carrierIds: [],
      error: "submit_sm refused: ESME_RSUBMITFAIL (0x45)",
      carrierFault: false,
    };
    expect(movesOn("alpha", { route }, refused)).toBeUndefined();
  });

  it("records the refusal when no other carrier is left, or there is no route", () => {
    expect(
      movesOn(
        "beta",
        { route: { name: "default", carriers: ["beta"], refusedBy: ["alpha"] } },
        fault,
      ),
    ).toBeUndefined();
    expect(movesOn("alpha", {}, fault)).toBeUndefined();
  });

  it("never moves anything with one carrier, nor what was accepted", () => {
    expect(movesOn(undefined, { route }, fault)).toBeUndefined();
    expect(movesOn("alpha", { route }, { carrierIds: ["a1"], carrierFault: true })).toBeUndefined();
  });
});
