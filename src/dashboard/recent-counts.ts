import type { StatusCount } from "../store/account-summary.ts";

// The overview's counts of the last 24 hours by status cost an index range per status (up to the
// cap each), so views do not each pay for them: an account's counts are computed once for all
// the views that ask meanwhile, and kept for FRESH_MS or ten times what computing them took,
// whichever is longer. The database then spends at most about a tenth of its time on one
// account's overview per instance, however many views come; the numbers are those of at most
// that long ago (docs/decisions.md, "Dashboard").

export const FRESH_MS = 5_000;
/** Counts kept at most this many times as long as they took to compute. */
const COST_FACTOR = 10;

interface Entry {
  counts: Promise<StatusCount[]>;
  /** Local ms; infinite while computing, so every view meanwhile waits for the same counts. */
  freshUntil: number;
}

export class RecentCounts {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly compute: (accountId: string) => Promise<StatusCount[]>,
    private readonly now: () => number = Date.now,
    private readonly freshMs = FRESH_MS,
    private readonly maxAccounts = 10_000,
  ) {}

  /** The account's counts: kept ones while fresh, else computed (once for concurrent views). */
  get(accountId: string): Promise<StatusCount[]> {
    const started = this.now();
    const kept = this.entries.get(accountId);
    if (kept && kept.freshUntil > started) return kept.counts;
    if (this.entries.size >= this.maxAccounts) this.dropStale(started);
    const entry: Entry = { counts: this.compute(accountId), freshUntil: Number.POSITIVE_INFINITY };
    this.entries.set(accountId, entry);
    entry.counts.then(
      () => {
        const finished = this.now();
        entry.freshUntil = finished + Math.max(this.freshMs, COST_FACTOR * (finished - started));
      },
      // A failure is not kept: the next view tries again.
      () => {
        if (this.entries.get(accountId) === entry) this.entries.delete(accountId);
      },
    );
    return entry.counts;
  }

  private dropStale(now: number): void {
    for (const [accountId, entry] of this.entries) {
      if (entry.freshUntil <= now) this.entries.delete(accountId);
    }
  }
}
