/**
 * The notifier's wake-up (docs/design.md "Status webhooks"): a change stream on `messages` tells the
 * dispatcher at once that something changed. Its resume token is stored in `state` and used on
 * restart, so the changes made while no notifier ran are replayed; a failing stream is reopened,
 * and a token that cannot be resumed from is dropped after a second failure (the overdue sweep and
 * the periodic wake-up cover what happened meanwhile).
 */
import type { ChangeStream, ChangeStreamOptions, Document } from "mongodb";
import type { Logger } from "../logger.ts";
import type { Store } from "../store/database.ts";
import { loadResumeToken, saveResumeToken } from "./resume-token.ts";

export interface ChangeWatcherOptions {
  store: Store;
  logger: Logger;
  /** `state` document holding the resume token. */
  tokenKey: string;
  /** Pause between two empty polls. */
  idleMs: number;
  /** Pause before reopening a failed stream. */
  retryMs: number;
  /** Called for every change (and after a failure, in case one was missed). */
  onChange: () => void;
  /** Called for every event, with the time of its write when the event tells it (metrics only). */
  onEvent?: (writtenAt: Date | undefined) => void;
}

export interface ChangeWatcherStats {
  streamEvents: number;
  streamOpens: number;
  /** Whether the stream was (last) opened from a stored resume token. */
  resumedFromToken: boolean;
}

export class ChangeWatcher {
  private running = false;
  private loop: Promise<void> | undefined;
  private stream: ChangeStream<Document> | undefined;
  private pause: { timer: NodeJS.Timeout; resolve: () => void } | undefined;
  private resumeToken: unknown;
  private savedToken: unknown;
  private readonly counters: ChangeWatcherStats = {
    streamEvents: 0,
    streamOpens: 0,
    resumedFromToken: false,
  };

  constructor(private readonly options: ChangeWatcherOptions) {}

  /** Reads the stored token, then watches in the background. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      this.resumeToken = await loadResumeToken(this.options.store, this.options.tokenKey);
      this.savedToken = this.resumeToken;
    } catch (error) {
      this.options.logger.warn({ err: error }, "notifier: cannot read the stored resume token");
    }
    this.loop = this.watchLoop();
  }

  /** Closes the stream and stores the last token. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.interruptPause();
    await this.stream?.close().catch(() => undefined);
    await this.loop;
    await this.persistToken();
  }

  stats(): ChangeWatcherStats {
    return { ...this.counters };
  }

  /** Stores the latest token when it changed since the last store. */
  async persistToken(): Promise<void> {
    const token = this.resumeToken;
    if (token === undefined || token === this.savedToken) return;
    try {
      await saveResumeToken(this.options.store, token, this.options.tokenKey);
      this.savedToken = token;
    } catch (error) {
      this.options.logger.warn({ err: error }, "notifier: cannot store the resume token");
    }
  }

  /**
   * Polls the change stream with `tryNext`, pausing `idleMs` after an empty answer (the test
   * emulator answers getMore at once instead of waiting, and scans its whole oplog each time), and
   * reopens it after an error.
   */
  private async watchLoop(): Promise<void> {
    const { store, logger, onChange } = this.options;
    let failures = 0;
    while (this.running) {
      const options: ChangeStreamOptions = { maxAwaitTimeMS: 500 };
      const resuming = this.resumeToken !== undefined && this.resumeToken !== null;
      if (resuming) options.resumeAfter = this.resumeToken as ChangeStreamOptions["resumeAfter"];
      let events = 0;
      let stream: ChangeStream<Document> | undefined;
      try {
        stream = store.messages.watch<Document>(
          // Only a wake-up signal: the event's resume token is all that is needed, and the time
          // of its write (wallTime, MongoDB 6+; the test emulator sets it too) for the metrics.
          [
            { $match: { operationType: { $in: ["insert", "update", "replace"] } } },
            { $project: { _id: 1, wallTime: 1 } },
          ],
          options,
        );
        this.stream = stream;
        this.counters.streamOpens++;
        this.counters.resumedFromToken = resuming;
        while (this.running) {
          const event = await stream.tryNext();
          if (event) {
            events++;
            failures = 0;
            this.counters.streamEvents++;
            this.resumeToken = event._id;
            this.options.onEvent?.(writtenAt(event));
            onChange();
            // Drain what the last getMore brought; pause before asking the server again.
            if (bufferedEvents(stream) !== 0) continue;
          }
          if (!this.running) break;
          await this.pauseFor(this.options.idleMs);
        }
      } catch (error) {
        if (!this.running) break;
        failures = events > 0 ? 1 : failures + 1;
        if (failures >= 2 && this.resumeToken !== undefined) {
          // A token that cannot be resumed from (history lost, or refused): start afresh.
          logger.warn(
            { err: error },
            "notifier: change stream cannot resume from the stored token; starting afresh",
          );
          this.resumeToken = undefined;
        } else {
          logger.warn({ err: error }, "notifier: change stream failed; reopening");
        }
        onChange();
        await this.pauseFor(this.options.retryMs);
      } finally {
        if (stream) {
          const latest = stream.resumeToken;
          if (events > 0 && latest !== undefined && latest !== null) this.resumeToken = latest;
          await stream.close().catch(() => undefined);
        }
        if (this.stream === stream) this.stream = undefined;
      }
    }
  }

  private pauseFor(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.pause = undefined;
        resolve();
      }, ms);
      this.pause = { timer, resolve };
    });
  }

  private interruptPause(): void {
    const pause = this.pause;
    this.pause = undefined;
    if (pause) {
      clearTimeout(pause.timer);
      pause.resolve();
    }
  }
}

/**
 * Events the change stream holds already (no server round trip to read them); undefined when the
 * driver does not tell. Reads the driver's internal cursor, hence the guards.
 */
function bufferedEvents(stream: ChangeStream<Document>): number | undefined {
  const cursor = (stream as unknown as { cursor?: { bufferedCount?: () => number } }).cursor;
  return typeof cursor?.bufferedCount === "function" ? cursor.bufferedCount() : undefined;
}

/** When the change's write happened: its wallTime, where the server sets one (MongoDB 6+). */
function writtenAt(event: Document): Date | undefined {
  return event.wallTime instanceof Date ? event.wallTime : undefined;
}
