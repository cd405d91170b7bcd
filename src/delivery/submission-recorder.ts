/**
 * Records carrier answers as they come, coalesced: outcomes handed in while a write is under way
 * go together in the next one. A part holds its place in the carrier's window until its record is
 * written (the crash bound), so the window turns over at the pace of these writes: one bulkWrite
 * for everything answered meanwhile instead of one per claim keeps that pace up.
 */
import type { Collection } from "mongodb";
import type { MessageDoc } from "../store/documents.ts";
import type { ServerClock } from "../store/server-clock.ts";
import { recordSubmissions, type SubmissionOutcome } from "./delivery-queue.ts";

export interface RecordedCounts {
  sent: number;
  sendErrors: number;
}

interface Pending {
  outcomes: readonly SubmissionOutcome[];
  done: (error?: unknown) => void;
}

export class SubmissionRecorder {
  private pending: Pending[] = [];
  private writing = 0;

  constructor(
    private readonly messages: Collection<MessageDoc>,
    private readonly clock: ServerClock,
    /** Told what each write changed (the worker's counters). */
    private readonly onRecorded: (counts: RecordedCounts) => void = () => {},
    /** Writes under way at once: a second one starts while the first waits for the database. */
    private readonly writesAtOnce = 2,
    /** The carrier's name, recorded with its ids when the plan has several. */
    private readonly carrier?: string,
  ) {}

  /** Resolves once these outcomes are written (with whatever else was waiting). */
  record(outcomes: readonly SubmissionOutcome[]): Promise<void> {
    if (outcomes.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.pending.push({ outcomes, done: (error) => (error ? reject(error) : resolve()) });
      if (this.writing < this.writesAtOnce) void this.writeAll();
    });
  }

  private async writeAll(): Promise<void> {
    this.writing++;
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      try {
        const counts = await recordSubmissions(
          this.messages,
          batch.flatMap((p) => p.outcomes),
          this.clock.now(),
          this.carrier,
        );
        this.onRecorded(counts);
        for (const p of batch) p.done();
      } catch (error) {
        for (const p of batch) p.done(error);
      }
    }
    this.writing--;
  }
}
