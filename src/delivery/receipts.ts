/**
 * The worker's receipt handler: applies the carrier's receipts (store/receipts.ts) and marks the
 * notification lanes of the accounts concerned. Receipts whose part cannot be matched yet are
 * handed back to the carrier to be offered again (at least once; see carrier.ts).
 */

import type { LaneMarker } from "../scheduling/lanes.ts";
import type { Store } from "../store/database.ts";
import { applyReceipts, type ReceiptUpdate } from "../store/receipts.ts";
import type { CarrierReceipt, ReceiptHandlerResult, ReceiptRules } from "./carrier.ts";

export class ReceiptHandler {
  /** Messages this instance submitted, by id, with the promise of their submission's record. */
  private readonly recording = new Map<number, Promise<void>>();

  constructor(
    private readonly store: Store,
    private readonly marks: LaneMarker,
    private readonly counters: {
      receipts: number;
      receiptChanges: number;
      receiptsAmbiguous?: number;
    },
    private readonly logger: {
      debug(obj: unknown, msg?: string): void;
      warn?(obj: unknown, msg?: string): void;
    },
    /** The carrier's name when the plan has several: its receipts match only its own parts. */
    private readonly carrier?: string,
    /** How the carrier's ids and multi-part receipts are matched; default exact, each. */
    private readonly rules?: ReceiptRules,
  ) {}

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
    return { retry: applied.flatMap((result) => result.retry) };
  };

  private async apply(receipts: readonly CarrierReceipt[]): Promise<{ retry: string[] }> {
    if (receipts.length === 0) return { retry: [] };
    const updates = receipts.map((r) => {
      const update: ReceiptUpdate = { carrierId: r.carrierId, status: r.status };
      if (r.reason) update.reason = r.reason;
      if (r.messageId !== undefined) update.messageId = r.messageId;
      if (r.carrierStatus) update.carrierStatus = r.carrierStatus;
      return update;
    });
    const now = this.store.clock.now();
    const result = await applyReceipts(this.store.messages, updates, now, this.carrier, this.rules);
    this.counters.receipts += receipts.length;
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
