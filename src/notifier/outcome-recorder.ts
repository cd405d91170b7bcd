/**
 * Writes what became of claimed notifications, buffered: everything recorded while a write is
 * under way goes in the next one (one bulkWrite per round). After each write the claims that
 * ended stop being renewed and the lanes of messages left with a due notification are marked.
 * One per queue: status notifications (notification-records.ts), inbound webhooks
 * (inbound-records.ts).
 */
import type { Logger } from "../logger.ts";
import type { Store } from "../store/database.ts";
import type { NotificationClaimer } from "./claiming.ts";

/** What a recorder needs of an outcome: its document and claim, and whether the claim goes on. */
export interface RecordedOutcome {
  messageId: number;
  claim: string;
  keepLease?: boolean;
}

interface Pending<O> {
  outcome: O;
  accountId: string;
}

export class OutcomeRecorder<O extends RecordedOutcome> {
  private results: Pending<O>[] = [];
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      store: Store;
      claimer: Pick<NotificationClaimer, "release" | "mark" | "flushMarks">;
      logger: Logger;
      /**
       * Writes the outcomes in one bulkWrite; answers for each the due time its document was left
       * with (undefined: none, or the claim goes on), at which its account's lane is marked.
       */
      write: (outcomes: O[], now: Date) => Promise<(Date | undefined)[]>;
      /** After each write, with the account of each outcome written (once per outcome). */
      recorded: (accountIds: string[]) => void;
      /** After each write, with the earliest due time its outcomes left in the future. */
      dueAt?: (at: Date) => void;
    },
  ) {}

  record(outcome: O, accountId: string): void {
    this.results.push({ outcome, accountId });
    if (!this.flushing) this.flushing = this.flushLoop();
  }

  /** Resolves when everything recorded so far is written. */
  async drain(): Promise<void> {
    while (this.flushing || this.results.length > 0) {
      this.flushing ??= this.flushLoop();
      await this.flushing;
    }
  }

  private async flushLoop(): Promise<void> {
    const { store, claimer, logger } = this.deps;
    try {
      while (this.results.length > 0) {
        const batch = this.results;
        this.results = [];
        const started = Date.now();
        let dueAt: (Date | undefined)[] = [];
        try {
          dueAt = await this.deps.write(
            batch.map((p) => p.outcome),
            store.clock.now(),
          );
          logger.debug({ count: batch.length, ms: Date.now() - started }, "notifier: recorded");
        } catch (error) {
          // The claims run out and the notifications are sent again (at least once).
          logger.error({ err: error, count: batch.length }, "notifier: recording outcomes failed");
        }
        let earliest: Date | undefined;
        for (const [i, { outcome, accountId }] of batch.entries()) {
          if (!outcome.keepLease) claimer.release(outcome.messageId, outcome.claim);
          const at = dueAt[i];
          if (at) claimer.mark(accountId, at);
          if (at && (earliest === undefined || at < earliest)) earliest = at;
        }
        if (earliest && earliest.getTime() > store.clock.nowMs()) this.deps.dueAt?.(earliest);
        await claimer.flushMarks();
        this.deps.recorded(batch.map((p) => p.accountId));
      }
    } finally {
      this.flushing = undefined;
    }
  }
}
