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

/** How long the guard's epoch stays (about 6 days): its times stay below 2^29 ms after it. */
const REBASE_AFTER_MS = 2 ** 29;

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

/**
 * One range's destinations (oldest first: a number seen again moves to the end). Times are ms
 * after the guard's epoch, and a destination is keyed by its last `digits` digits as a number
 * (see `destinationKey`): both small integers, which V8 keeps in the map itself, so an entry
 * holds no string or boxed number of its own. A batch adds thousands of entries that live for
 * the window: as objects they were promoted and traced by every collection meanwhile.
 */
interface RangeSeen {
  /** Destination → when last seen. */
  seen: Map<number | string, number>;
  /** At most the time of the oldest entry: while it is inside the window, none is stale. */
  firstAt: number;
  /** When the newest entry was seen. */
  lastAt: number;
}

/** What a run of checks shares: the mode, the limit and the instant (after the epoch). */
interface CheckRun {
  accountId: string;
  mode: "monitor" | "block";
  max: number;
  now: number;
  since: number;
  /** The previous destination's range (with its "+", if any) and its record. */
  prefix: string;
  range: RangeSeen | undefined;
}

export class TollFraudGuard {
  /** `<account> <range>` → its destinations. */
  private readonly ranges = new Map<string, RangeSeen>();
  /** The clock's reading that times are counted from (so they stay small integers). */
  private epoch: number;
  /** When idle ranges were last dropped (after the epoch). */
  private sweptAt = 0;

  constructor(
    private readonly settings: RiskSettings = DEFAULT_RISK,
    private readonly now: () => number = Date.now,
  ) {
    this.epoch = now();
  }

  /** The mode in force for an account, with the operator's overrides. */
  modeOf(overrides?: RiskOverrides): RiskOverrides["mode"] {
    return overrides?.mode ?? this.settings.mode;
  }

  /**
   * Counts `to` (as the intake checked it: E.164) for the account and says what to do with it. A
   * destination seen within the window already is not a new one; a refused one is not counted
   * (it was never sent).
   */
  check(accountId: string, to: string, overrides?: RiskOverrides): RiskVerdict {
    const run = this.run(accountId, overrides);
    return run ? this.count(run, to) : "ok";
  }

  /**
   * A batch's checks, in its order: one mode, limit and instant for all its messages (a batch is
   * sent at once), and the range looked up again only when it changes, so consecutive numbers cost
   * a comparison, not a key and a lookup each. Undefined when the guard is off for the account.
   */
  checker(accountId: string, overrides?: RiskOverrides): ((to: string) => RiskVerdict) | undefined {
    const run = this.run(accountId, overrides);
    return run && ((to) => this.count(run, to));
  }

  private run(accountId: string, overrides?: RiskOverrides): CheckRun | undefined {
    const mode = this.modeOf(overrides);
    if (mode === "off" || mode === undefined) return undefined;
    let now = this.now() - this.epoch;
    if (now >= REBASE_AFTER_MS) now -= this.rebase(now);
    const windowMs = this.settings.prefixBurst.windowSeconds * 1000;
    const since = now - windowMs;
    // A range nobody sends to again kept its entries until 50000 ranges were tracked (up to
    // 10^digits entries each: a batch to new ranges left 10000 a batch): once a window, the
    // ranges idle for a whole window go, all their entries being stale.
    if (now - this.sweptAt >= windowMs) {
      this.sweptAt = now;
      this.sweep(since);
    }
    return {
      accountId,
      mode,
      max: overrides?.max ?? this.settings.prefixBurst.max,
      now,
      since,
      prefix: "",
      range: undefined,
    };
  }

  private count(run: CheckRun, to: string): RiskVerdict {
    const { digits } = this.settings.prefixBurst;
    // Same length and the same leading digits: the same range as the previous number.
    let range = run.range;
    if (!range || to.length !== run.prefix.length + digits || !to.startsWith(run.prefix)) {
      run.prefix = to.slice(0, Math.max(0, to.length - digits));
      range = this.rangeSeen(`${run.accountId} ${run.prefix}`, run.since);
      run.range = range;
    }
    const { seen } = range;
    if (range.firstAt <= run.since) {
      range.firstAt = Number.POSITIVE_INFINITY;
      for (const [n, at] of seen) {
        if (at > run.since) {
          range.firstAt = at;
          break;
        }
        seen.delete(n);
      }
    }
    const key = destinationKey(to, run.prefix.length, digits);
    const known = seen.delete(key);
    if (!known && seen.size >= run.max && run.mode === "block") return "refused";
    const verdict = known || seen.size < run.max ? "ok" : "flagged";
    seen.set(key, run.now);
    if (seen.size === 1) range.firstAt = run.now;
    range.lastAt = run.now;
    return verdict;
  }

  private rangeSeen(key: string, since: number): RangeSeen {
    let range = this.ranges.get(key);
    if (!range) {
      if (this.ranges.size >= MAX_RANGES) this.sweep(since);
      range = { seen: new Map(), firstAt: Number.POSITIVE_INFINITY, lastAt: 0 };
      this.ranges.set(key, range);
    }
    return range;
  }

  /**
   * Moves the epoch `by` ms later, every time held with it: times stay small integers (V8's
   * are below 2^30) however long the instance runs. Once in REBASE_AFTER_MS.
   */
  private rebase(by: number): number {
    this.epoch += by;
    this.sweptAt -= by;
    for (const range of this.ranges.values()) {
      range.firstAt -= by;
      range.lastAt -= by;
      // Setting a key that is there keeps its place: the order (oldest first) holds.
      for (const [key, at] of range.seen) range.seen.set(key, at - by);
    }
    return by;
  }

  /** The ranges tracked and their destinations, all accounts together (what the guard holds). */
  tracked(): { ranges: number; destinations: number } {
    let destinations = 0;
    for (const range of this.ranges.values()) destinations += range.seen.size;
    return { ranges: this.ranges.size, destinations };
  }

  /** The range `to` falls in, as the guard counts it. */
  rangeOf(to: string): string {
    return rangeOf(to.startsWith("+") ? to.slice(1) : to, this.settings.prefixBurst.digits);
  }

  private sweep(since: number): void {
    for (const [key, range] of this.ranges) if (range.lastAt <= since) this.ranges.delete(key);
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

/**
 * A destination's key within its range: its last `digits` characters as a number when they are
 * all digits (every number of a range has its length, so they tell its numbers apart), else the
 * destination itself (a number shorter than `digits`, or not digits).
 */
function destinationKey(to: string, prefixLength: number, digits: number): number | string {
  if (to.length < digits || digits > 15) return to;
  let key = 0;
  for (let i = prefixLength; i < to.length; i++) {
    const digit = to.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return to;
    key = key * 10 + digit;
  }
  return key;
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
