import { describe, expect, it } from "vitest";
import {
  batchCounters,
  canTransition,
  combinePartStatuses,
  isFinal,
  isReasonName,
  isRetryableReason,
  isStatusName,
  isValidReasonFor,
  nextMessageStatus,
  REASON_NAMES,
  STATUS_NAMES,
  type StatusName,
} from "../../src/domain/message-status.ts";

describe("statuses and reasons", () => {
  it("are the five statuses and five reasons of the spec, and CANCELED beyond them", () => {
    expect(STATUS_NAMES).toEqual([
      "ACCEPTED",
      "SENT",
      "DELIVERED",
      "SEND_ERROR",
      "DELIVERY_ERROR",
      "CANCELED",
    ]);
    expect(REASON_NAMES).toEqual([
      "Undelivered",
      "Unreachable",
      "Expired",
      "SIM card full",
      "Unroutable",
    ]);
    expect(isStatusName("SENT")).toBe(true);
    expect(isStatusName("sent")).toBe(false);
    expect(isReasonName("SIM card full")).toBe(true);
    expect(isReasonName("Busy")).toBe(false);
  });
  it("only Expired is worth resending", () => {
    expect(REASON_NAMES.filter(isRetryableReason)).toEqual(["Expired"]);
  });
  it("DELIVERY_ERROR carries a reason, other statuses none", () => {
    expect(isValidReasonFor("DELIVERY_ERROR", "Unreachable")).toBe(true);
    expect(isValidReasonFor("DELIVERY_ERROR", undefined)).toBe(false);
    expect(isValidReasonFor("SEND_ERROR", undefined)).toBe(true);
    expect(isValidReasonFor("SENT", "Expired")).toBe(false);
  });
});

describe("lifecycle: ACCEPTED → SENT → DELIVERED | DELIVERY_ERROR; ACCEPTED → SEND_ERROR", () => {
  const allowed = new Set([
    "ACCEPTED>SENT",
    "ACCEPTED>SEND_ERROR",
    "ACCEPTED>DELIVERY_ERROR", // ttl ran out before sending (Expired)
    "ACCEPTED>CANCELED", // its account canceled it before any carrier took it
    "SENT>DELIVERED",
    "SENT>DELIVERY_ERROR",
  ]);
  it("allows exactly these moves", () => {
    for (const from of STATUS_NAMES) {
      for (const to of STATUS_NAMES) {
        expect(canTransition(from, to), `${from}>${to}`).toBe(allowed.has(`${from}>${to}`));
      }
    }
  });
  it("DELIVERED, SEND_ERROR, DELIVERY_ERROR and CANCELED are final", () => {
    expect(STATUS_NAMES.filter(isFinal)).toEqual([
      "DELIVERED",
      "SEND_ERROR",
      "DELIVERY_ERROR",
      "CANCELED",
    ]);
  });
});

describe("multi-part: one status per message", () => {
  it("a single part's status is the message's", () => {
    // A part is never CANCELED: only a whole message is.
    for (const s of STATUS_NAMES.filter((s) => s !== "CANCELED"))
      expect(combinePartStatuses([s])).toBe(s);
  });
  it("DELIVERED only when every part is", () => {
    expect(combinePartStatuses(["DELIVERED", "DELIVERED", "DELIVERED"])).toBe("DELIVERED");
    expect(combinePartStatuses(["DELIVERED", "SENT", "DELIVERED"])).toBe("SENT");
  });
  it("DELIVERY_ERROR when any part fails", () => {
    expect(combinePartStatuses(["DELIVERED", "DELIVERY_ERROR"])).toBe("DELIVERY_ERROR");
    expect(combinePartStatuses(["ACCEPTED", "DELIVERY_ERROR"])).toBe("DELIVERY_ERROR");
    expect(combinePartStatuses(["SEND_ERROR", "DELIVERY_ERROR"])).toBe("DELIVERY_ERROR");
  });
  it("SEND_ERROR when a part's submission failed", () => {
    expect(combinePartStatuses(["SENT", "SEND_ERROR"])).toBe("SEND_ERROR");
    expect(combinePartStatuses(["DELIVERED", "SEND_ERROR", "ACCEPTED"])).toBe("SEND_ERROR");
  });
  it("SENT once every part is sent, ACCEPTED while one is not", () => {
    expect(combinePartStatuses(["SENT", "SENT"])).toBe("SENT");
    expect(combinePartStatuses(["SENT", "ACCEPTED"])).toBe("ACCEPTED");
    expect(combinePartStatuses(["DELIVERED", "ACCEPTED"])).toBe("ACCEPTED");
  });
  it("a message has at least one part", () => {
    expect(() => combinePartStatuses([])).toThrow(RangeError);
  });
  it("a final message status stays: the first one reached is kept", () => {
    expect(nextMessageStatus("SEND_ERROR", ["SEND_ERROR", "DELIVERY_ERROR"])).toBe("SEND_ERROR");
    expect(nextMessageStatus("SENT", ["DELIVERED", "DELIVERY_ERROR"])).toBe("DELIVERY_ERROR");
    expect(nextMessageStatus("ACCEPTED", ["SENT", "SENT"])).toBe("SENT");
  });
  it("parts moving one at a time only ever move the message along allowed transitions", () => {
    // Exhaustive over 3 parts: from every reachable state, apply every allowed single-part move.
    const step = (parts: StatusName[]) =>
      parts.flatMap((p, i) =>
        STATUS_NAMES.filter((to) => canTransition(p, to)).map((to) =>
          parts.map((q, j) => (j === i ? to : q)),
        ),
      );
    const seen = new Set<string>();
    const queue: Array<{ parts: StatusName[]; msg: StatusName }> = [
      { parts: ["ACCEPTED", "ACCEPTED", "ACCEPTED"], msg: "ACCEPTED" },
    ];
    while (queue.length > 0) {
      const { parts, msg } = queue.pop() as { parts: StatusName[]; msg: StatusName };
      const key = `${parts.join()}|${msg}`;
      if (seen.has(key)) continue;
      seen.add(key);
      for (const next of step(parts)) {
        const m = nextMessageStatus(msg, next);
        expect(m === msg || canTransition(msg, m), `${msg} -> ${m} on ${next.join()}`).toBe(true);
        queue.push({ parts: next, msg: m });
      }
    }
    expect(seen.size).toBeGreaterThan(50);
  });
});

describe("batch counters", () => {
  it("sent = SENT or later, delivered = DELIVERED, undelivered = DELIVERY_ERROR + SEND_ERROR", () => {
    expect(
      batchCounters(["ACCEPTED", "SENT", "DELIVERED", "DELIVERY_ERROR", "SEND_ERROR"]),
    ).toEqual({
      sentCount: 3,
      deliveredCount: 1,
      undeliveredCount: 2,
      canceledCount: 0,
      isActive: true,
    });
  });
  it("CANCELED counts as undelivered and in canceledCount; a batch all final is inactive", () => {
    expect(batchCounters(["CANCELED", "DELIVERED", "CANCELED"])).toEqual({
      sentCount: 1,
      deliveredCount: 1,
      undeliveredCount: 2,
      canceledCount: 2,
      isActive: false,
    });
    expect(batchCounters(["CANCELED", "ACCEPTED"]).isActive).toBe(true);
  });
  it("inactive once every accepted message is delivered or undelivered", () => {
    expect(batchCounters(["DELIVERED", "SEND_ERROR", "DELIVERY_ERROR"]).isActive).toBe(false);
    expect(batchCounters(["DELIVERED", "SENT"]).isActive).toBe(true);
    expect(batchCounters([]).isActive).toBe(false);
  });
});
