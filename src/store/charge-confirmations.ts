import { backgroundWriteOptions } from "./deadline.ts";
import type { PendingCharge } from "./documents.ts";
import { entryOf, type MoneyCollections, recordEntries, type UsageDelta } from "./ledger.ts";

/**
 * How long a confirmation may wait for those of the groups behind it while the message writer
 * has sends waiting. The records a wait adds to an account's pending list are the groups written
 * in it (a handful, against MAX_PENDING_CHARGES).
 */
const CONFIRM_DEFER_MS = 20;

/**
 * Removes the pending records of charges whose messages are stored, after writing their ledger
 * entries and usage. Confirmations are buffered and written per account in one bulk write, off
 * the request path.
 */
export class ChargeConfirmations {
  private buffered: { apiKey: string; charge: PendingCharge; usage: readonly UsageDelta[] }[] = [];
  private flushing: Promise<void> = Promise.resolve();
  /** A flush on the next turn of the event loop is scheduled. */
  private flushScheduled = false;
  /** A deferred flush (under load) is scheduled. */
  private deferred: NodeJS.Timeout | undefined;

  /** `onError` hears of a failed flush; the records stay pending and the settler resolves them. */
  constructor(
    private readonly money: MoneyCollections,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /**
   * Buffers a confirmation and schedules a flush, so everything confirmed meanwhile is written
   * together: the account document's pending list stays as short as the writes in flight, which
   * keeps every debit of that account cheap. `usage`: what the charge adds to the usage rows.
   * `more`: further writes are already waiting (the message writer under load), so the flush may
   * wait up to CONFIRM_DEFER_MS for their confirmations: one write for several groups instead of
   * one per group. Without `more` everything buffered is written on the next turn of the loop.
   */
  add(
    apiKey: string,
    charge: PendingCharge,
    usage: readonly UsageDelta[] = [],
    more = false,
  ): void {
    this.buffered.push({ apiKey, charge, usage });
    if (this.flushScheduled) return;
    if (more) {
      this.deferred ??= setTimeout(() => this.scheduledFlush(), CONFIRM_DEFER_MS).unref();
      return;
    }
    this.flushScheduled = true;
    setImmediate(() => this.scheduledFlush());
  }

  private scheduledFlush(): void {
    this.flushScheduled = false;
    clearTimeout(this.deferred);
    this.deferred = undefined;
    this.flush().catch(this.onError);
  }

  /** Writes what is buffered. Failures keep the records pending, which the settler resolves. */
  flush(): Promise<void> {
    // After a failed flush the next one still runs: its failure was reported to its caller.
    this.flushing = this.flushing
      .catch(() => undefined)
      .then(async () => {
        if (this.buffered.length === 0) return;
        const batch = this.buffered;
        this.buffered = [];
        // The entries first: a record goes only once its entry is written.
        await recordEntries(
          this.money,
          batch.map(({ apiKey, charge, usage }) => ({
            entry: entryOf(apiKey, charge, -charge.amountMicros),
            usage,
          })),
        );
        const refs = new Map<
          string,
          { apiKey: string; kind: PendingCharge["kind"]; refs: number[] }
        >();
        for (const { apiKey, charge } of batch) {
          const key = `${charge.kind}:${apiKey}`;
          const entry = refs.get(key);
          if (entry) entry.refs.push(charge.ref);
          else refs.set(key, { apiKey, kind: charge.kind, refs: [charge.ref] });
        }
        await this.money.accounts.bulkWrite(
          [...refs.values()].map(({ apiKey, kind, refs }) => ({
            updateOne: {
              filter: { _id: apiKey },
              update: { $pull: { pendingCharges: { kind: { $eq: kind }, ref: { $in: refs } } } },
            },
          })),
          { ordered: false, ...backgroundWriteOptions() },
        );
      });
    return this.flushing;
  }
}
