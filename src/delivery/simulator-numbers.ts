import type { ReasonName } from "../domain/message-status.ts";

// The simulator's outcome by destination number, exactly per the design table: numbers starting
// with +999 and ending in
//   1 SEND_ERROR · 2 Unreachable · 3 Expired · 4 SIM card full · 5 Unroutable · 6 Undelivered
//   7 SENT and then no receipt (the message expires when its ttl runs out)
// and every other number is DELIVERED. `+` is optional in the API's number format, so `999…` is
// treated as `+999…`.

export type SimulatedOutcome =
  | { kind: "DELIVERED" }
  | { kind: "SEND_ERROR" }
  | { kind: "DELIVERY_ERROR"; reason: ReasonName }
  | { kind: "NO_RECEIPT" };

const BY_LAST_DIGIT: Readonly<Record<string, SimulatedOutcome>> = {
  "1": { kind: "SEND_ERROR" },
  "2": { kind: "DELIVERY_ERROR", reason: "Unreachable" },
  "3": { kind: "DELIVERY_ERROR", reason: "Expired" },
  "4": { kind: "DELIVERY_ERROR", reason: "SIM card full" },
  "5": { kind: "DELIVERY_ERROR", reason: "Unroutable" },
  "6": { kind: "DELIVERY_ERROR", reason: "Undelivered" },
  "7": { kind: "NO_RECEIPT" },
};

/** The designed outcome for a destination number. */
export function simulatedOutcome(to: string): SimulatedOutcome {
  const digits = to.startsWith("+") ? to.slice(1) : to;
  if (digits.startsWith("999")) {
    const outcome = BY_LAST_DIGIT[digits.slice(-1)];
    if (outcome) return outcome;
  }
  return { kind: "DELIVERED" };
}
