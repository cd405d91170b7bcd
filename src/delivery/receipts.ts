/**
 * The worker's receipt handler: applies the carrier's receipts (store/receipts.ts) and marks the
 * notification lanes of the accounts concerned.
 *
 * A receipt whose part cannot be matched yet (it overtook the recording of its submission, here
 * or on another instance) is kept among unmatched receipts (store/unmatched-receipts.ts) and
 * then answered: the carrier's `deliver_sm_resp` never waits for the match (docs/design.md
 * "Carrier-grade SMPP": "Receipts that overtake"). Every `sweepMs` the carrier's kept receipts are
 * applied again; a match removes one; one still unmatched after `holdMs` (10 minutes) is dropped,
 * logged and counted. While keeping fails (the database), the receipt is offered again unanswered.
 * A receipt of a message this instance is recording waits for that record instead.
 */

import type { LaneMarker } from "../scheduling/lanes.ts";
import type { Store } from "../store/database.ts";
import { applyReceipts, type ReceiptUpdate } from "../store/receipts.ts";
import {
  forgetKept,
  type KeptReceipt,
  keepUnmatched,
  keptFor,
  unmatchedReceipts,
} from "../store/unmatched-receipts.ts";
import type { CarrierReceipt, ReceiptHandlerResult, ReceiptRules } from "./carrier.ts";

/** How long a receipt that matched nothing is kept and matched again (docs/design.md: 10 minutes). */
export const UNMATCHED_HOLD_MS = 10 * 60_000;
/** Kept receipts applied again per sweep at most. */
const SWEEP_BATCH = 500;

export interface UnmatchedReceiptOptions {
  /** Default UNMATCHED_HOLD_MS. */
  holdMs?: number;
  /** How often kept receipts are applied again. Default 1000. */
  sweepMs?: number;
}

export class ReceiptHandler {
  /** Messages this instance submitted, by id, with the promise of their submission's record. */
  private readonly recording = new Map<number, Promise<void>>();
  private readonly holdMs: number;
  private readonly sweepMs: number;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly store: Store,
    private readonly marks: LaneMarker,
    private readonly counters: {
      receipts: number;
      receiptChanges: number;
      receiptsAmbiguous?: number;
      /** Receipts that matched nothing when they came, kept (unmatched-receipts.ts). */
      receiptsKept?: number;
      /** Kept receipts still unmatched after the hold: dropped. */
      receiptsUnmatchedDropped?: number;
    },
    private readonly logger: {
      debug(obj: unknown, msg?: string): void;
      warn?(obj: unknown, msg?: string): void;
    },
    /** The carrier's name when the plan has several: its receipts match only its own parts. */
    private readonly carrier?: string,
    /** How the carrier's ids and multi-part receipts are matched; default exact, each. */
    private readonly rules?: ReceiptRules,
    unmatched: UnmatchedReceiptOptions = {},
  ) {
    this.holdMs = unmatched.holdMs ?? UNMATCHED_HOLD_MS;
    this.sweepMs = unmatched.sweepMs ?? 1_000;
  }

  /** Starts applying kept receipts again every `sweepMs`. */
  start(): void {
    if (this.sweepTimer) return;
    this.sweepTimer = setInterval(() => void this.sweep(), this.sweepMs);
    this.sweepTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    await this.sweeping;
  }

  /** Applies the kept receipts again (one sweep at a time); failures are logged. */
  sweep(): Promise<void> {
    this.sweeping ??= this.sweepKept()
      .catch((err: unknown) => this.logger.warn?.({ err }, "matching kept receipts failed"))
      .finally(() => {
        this.sweeping = undefined;
      });
    return this.sweeping;
  }

  /** Receipts of `messages` wait for `recorded` rather than be offered again. */
  awaitRecording(messages: readonly { _id: number }[], recorded: Promise<void>): void {
    for (const message of messages) this.recording.set(message._id, recorded);
    const forget = () => {
      for (const message of messages)
        if (this.recording.get(message._id) === recorded) this.recording.delete(message._id);
    };
    recorded.then(forget, forget);
  }

  handle = async (receipts: CarrierReceipt[]): Promise<ReceiptHandlerResult> => {
    // A receipt can overtake the recording of its own submission (zero receipt delay): it waits
    // for that record rather than be offered again. The others are applied at once, beside it: a
    // receipt is not held back by other messages' records (a small batch's, in one call with a
    // big one's, waited up to 0.4 s for them: figure 6b).
    const ready: CarrierReceipt[] = [];
    const overtaking: CarrierReceipt[] = [];
    const recordings = new Set<Promise<void>>();
    for (const r of receipts) {
      const recording = r.messageId === undefined ? undefined : this.recording.get(r.messageId);
      if (recording) {
        recordings.add(recording);
        overtaking.push(r);
      } else {
        ready.push(r);
      }
    }
    const applied = await Promise.all([
      this.apply(ready),
      Promise.allSettled([...recordings]).then(() => this.apply(overtaking)),
    ]);
    const unmatched = new Set(applied.flatMap((result) => result.retry));
    if (unmatched.size === 0) return { retry: [] };
    // Kept, then answered: a failure here throws, and the carrier offers them again unanswered.
    const kept = new Map<string, KeptReceipt>();
    for (const r of receipts) if (unmatched.has(r.carrierId)) kept.set(r.carrierId, keptOf(r));
    const now = this.store.clock.now();
    await keepUnmatched(
      this.keptReceipts(),
      this.carrier ?? "",
      [...kept.values()],
      now,
      this.holdMs,
    );
    this.counters.receiptsKept = (this.counters.receiptsKept ?? 0) + kept.size;
    return { retry: [] };
  };

  private keptReceipts() {
    return unmatchedReceipts(this.store.db);
  }

  private async sweepKept(): Promise<void> {
    const now = this.store.clock.now();
    const kept = await keptFor(this.keptReceipts(), this.carrier ?? "", SWEEP_BATCH);
    if (kept.length === 0) return;
    const { retry } = await this.apply(
      kept.map((doc) => doc.receipt),
      false,
    );
    const still = new Set(retry);
    const matched = kept.filter((doc) => !still.has(doc.receipt.carrierId));
    const expired = kept.filter(
      (doc) => still.has(doc.receipt.carrierId) && doc.dropAt.getTime() <= now.getTime(),
    );
    await forgetKept(
      this.keptReceipts(),
      [...matched, ...expired].map((doc) => doc._id),
    );
    if (expired.length > 0) {
      this.counters.receiptsUnmatchedDropped =
        (this.counters.receiptsUnmatchedDropped ?? 0) + expired.length;
      this.logger.warn?.(
        {
          count: expired.length,
          carrierIds: expired.slice(0, 20).map((doc) => doc.receipt.carrierId),
          heldMs: this.holdMs,
        },
        "receipts that matched no part within the hold: dropped",
      );
    }
  }

  private async apply(
    receipts: readonly (CarrierReceipt | KeptReceipt)[],
    fresh = true,
  ): Promise<{ retry: string[] }> {
    if (receipts.length === 0) return { retry: [] };
    const updates = receipts.map((r) => {
      const update: ReceiptUpdate = { carrierId: r.carrierId, status: r.status };
      if (r.reason) update.reason = r.reason;
      if ("messageId" in r && r.messageId !== undefined) update.messageId = r.messageId;
      if (r.carrierStatus) update.carrierStatus = r.carrierStatus;
      return update;
    });
    const now = this.store.clock.now();
    const result = await applyReceipts(this.store.messages, updates, now, this.carrier, this.rules);
    if (fresh) this.counters.receipts += receipts.length;
    this.counters.receiptChanges += result.changed;
    for (const accountId of result.accounts) this.marks.mark(accountId, "notify", now);
    await this.marks.flush();
    if (result.ambiguous.length > 0) {
      this.counters.receiptsAmbiguous =
        (this.counters.receiptsAmbiguous ?? 0) + result.ambiguous.length;
      this.logger.warn?.(
        { count: result.ambiguous.length, carrierIds: result.ambiguous.slice(0, 20) },
        "receipts whose id matches several parts in another form: not guessed, dropped",
      );
    }
    if (result.retry.length > 0) {
      this.logger.debug(
        { count: result.retry.length },
        "receipts without a recorded submission yet",
      );
    }
    return { retry: result.retry };
  }
}

/** What is kept of a receipt that matched nothing (its message hint matched nothing either). */
function keptOf(receipt: CarrierReceipt): KeptReceipt {
  const kept: KeptReceipt = {
    carrierId: receipt.carrierId,
    status: receipt.status,
    at: receipt.at,
  };
  if (receipt.reason) kept.reason = receipt.reason;
  if (receipt.carrierStatus) kept.carrierStatus = receipt.carrierStatus;
  return kept;
}
