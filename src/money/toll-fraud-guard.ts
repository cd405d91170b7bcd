/**
 * The toll-fraud guard (docs/design.md "Money", "Toll-fraud guard"): SMS pumping sends bursts to
 * consecutive numbers of one range, so per account it counts the distinct destinations that share
 * all digits but the last `digits` within `windowSeconds`; past `max`, a message is flagged
 * (`monitor`) or refused (`block`).
 *
 * Counted in memory, per instance, like the opt-out list's cache: no read or write on the send's
 * path. With N instances behind a balancer a burst is seen by each, so it is caught by the time
 * N × max destinations went (docs/decisions.md, "Money").
 */
import { Code } from "@connectrpc/connect";
import type { Collection } from "mongodb";
import { DEFAULT_RISK, type RiskOverrides, type RiskSettings } from "../domain/risk-settings.ts";
import { fieldErrors } from "../errors/api-errors.ts";

export type RiskVerdict = "ok" | "flagged" | "refused";

/** Ranges tracked at once before idle ones are swept (a bound on memory, not on correctness). */
const MAX_RANGES = 50_000;

/** What the console lists: a message flagged or refused by the guard. */
export interface RiskEventDoc {
  accountId: string;
  at: Date;
  to: string;
  /** The range: every digit but the last `digits`. */
  range: string;
  action: "flagged" | "refused";
  messageId?: number;
}

export class TollFraudGuard {
  /** `<account> <range>` → destination → when last seen (ms). */
  private readonly ranges = new Map<string, Map<string, number>>();

  constructor(
    private readonly settings: RiskSettings = DEFAULT_RISK,
    private readonly now: () => number = Date.now,
  ) {}

  /** The mode in force for an account, with the operator's overrides. */
  modeOf(overrides?: RiskOverrides): RiskOverrides["mode"] {
    return overrides?.mode ?? this.settings.mode;
  }

  /**
   * Counts `to` for the account and says what to do with it. A destination seen within the window
   * already is not a new one; a refused one is not counted (it was never sent).
   */
  check(accountId: string, to: string, overrides?: RiskOverrides): RiskVerdict {
    const mode = this.modeOf(overrides);
    if (mode === "off") return "ok";
    const { digits, windowSeconds } = this.settings.prefixBurst;
    const max = overrides?.max ?? this.settings.prefixBurst.max;
    const number = to.startsWith("+") ? to.slice(1) : to;
    const key = `${accountId} ${rangeOf(number, digits)}`;
    const now = this.now();
    const since = now - windowSeconds * 1000;
    let seen = this.ranges.get(key);
    if (!seen) {
      if (this.ranges.size >= MAX_RANGES) this.sweep(since);
      seen = new Map();
      this.ranges.set(key, seen);
    }
    // Oldest first (a number seen again moves to the end): the stale ones are at the front, so a
    // check costs the few it removes, not the range's size.
    for (const [n, at] of seen) {
      if (at > since) break;
      seen.delete(n);
    }
    const known = seen.delete(number);
    if (known || seen.size < max) {
      seen.set(number, now);
      return "ok";
    }
    if (mode === "block") return "refused";
    seen.set(number, now);
    return "flagged";
  }

  /** The range `to` falls in, as the guard counts it. */
  rangeOf(to: string): string {
    return rangeOf(to.startsWith("+") ? to.slice(1) : to, this.settings.prefixBurst.digits);
  }

  private sweep(since: number): void {
    for (const [key, seen] of this.ranges) {
      let newest = 0;
      for (const at of seen.values()) if (at > newest) newest = at;
      if (newest <= since) this.ranges.delete(key);
    }
    // Still full: the oldest half goes (Map keeps insertion order).
    if (this.ranges.size >= MAX_RANGES) {
      let drop = this.ranges.size / 2;
      for (const key of this.ranges.keys()) {
        if (drop-- <= 0) break;
        this.ranges.delete(key);
      }
    }
  }
}

function rangeOf(digits: string, last: number): string {
  return digits.slice(0, Math.max(0, digits.length - last));
}

/** The refusal's words, in `errors.to`. */
export const TOLL_FRAUD_MESSAGE =
  "to is refused by the toll-fraud guard: too many distinct numbers of its range in a short time";

/** What the console keeps of a flagged or refused message. */
export function riskEvent(
  guard: TollFraudGuard,
  accountId: string,
  to: string,
  action: RiskEventDoc["action"],
  messageId?: number,
): RiskEventDoc {
  return {
    accountId,
    at: new Date(),
    to,
    range: guard.rangeOf(to),
    action,
    ...(messageId !== undefined && { messageId }),
  };
}

/** A single send refused: REST 400 `errors.to`, Connect FAILED_PRECONDITION. */
export const tollFraudRefused = () =>
  fieldErrors(
    Code.FailedPrecondition,
    { to: TOLL_FRAUD_MESSAGE },
    { reason: "SUSPECTED_TOLL_FRAUD" },
  );

/**
 * Keeps what the guard flagged or refused for the operator's console, off the send's path: a
 * failure to keep one is reported, never the send's.
 */
export class RiskEvents {
  constructor(
    private readonly events: Collection<RiskEventDoc>,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  keep(events: RiskEventDoc[]): void {
    if (events.length === 0) return;
    this.events.insertMany(events, { ordered: false }).catch(this.onError);
  }

  /** The newest first, for the console. */
  list(filter: { accountId?: string }, limit = 100): Promise<RiskEventDoc[]> {
    return this.events
      .find(filter.accountId ? { accountId: filter.accountId } : {}, { sort: { at: -1 }, limit })
      .toArray();
  }

  static async ensureIndexes(events: Collection<RiskEventDoc>): Promise<void> {
    // Kept 30 days, listed newest first.
    await events.createIndex({ at: 1 }, { name: "expire", expireAfterSeconds: 30 * 86_400 });
    await events.createIndex({ accountId: 1, at: -1 }, { name: "account_at" });
  }
}
