/**
 * The delivery worker (design "Message lifecycle"): moves accepted messages through the carrier.
 *
 * - Claims due messages in chunks (`claimDueDeliveries`: a lease pushed into `deliveryAt`), so
 *   several instances can run and a crashed instance's claims come back when the lease runs out.
 * - ACCEPTED: submits every part of the chunk in one carrier call and records SENT (with the parts'
 *   carrier ids) or SEND_ERROR in one bulkWrite. Once recorded, a message is never submitted again
 *   (the record is filtered on ACCEPTED and a SENT message is only due for expiry).
 * - Receipts from the carrier: DELIVERED when every part is, DELIVERY_ERROR with the reason of the
 *   first failed part.
 * - Expiry: a message still ACCEPTED or SENT when its ttl runs out becomes DELIVERY_ERROR / Expired
 *   (a SENT message is due again at `expiresAt`, so this happens within a poll interval).
 * Every status change carries its pending notification in the same single-document update.
 *
 * The worker owns its carrier's lifecycle: `start` starts the carrier with the worker's receipt
 * handler, `stop` finishes the chunks in flight and then stops the carrier.
 */

import { BatchCommits } from "../store/batch-commits.ts";
import type { Store } from "../store/database.ts";
import {
  applyReceipts,
  expireMessages,
  type ReceiptUpdate,
  type Release,
  recordSubmissions,
  releaseDeliveries,
  type SubmissionOutcome,
} from "../store/delivery-queue.ts";
import type {
  Carrier,
  CarrierPart,
  CarrierReceipt,
  ReceiptHandlerResult,
  SubmitResult,
} from "./carrier.ts";
import { type ClaimedMessage, claimDueDeliveries } from "./delivery-claims.ts";
import { WakeSignal } from "./wake-signal.ts";

/** The part of a pino logger the worker uses. */
export interface Logger {
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
  debug(obj: unknown, msg?: string): void;
}

export interface DeliveryWorkerOptions {
  store: Store;
  carrier: Carrier;
  logger: Logger;
  /** Distinguishes this instance's claims from other instances'. */
  instanceId: string;
  /** How often due work is looked for without a wake-up. Default 500. */
  pollIntervalMs?: number;
  /** Messages per claim (one carrier submit, one bulkWrite). Default 250. */
  chunkSize?: number;
  /** Chunks worked on at once. Default 2. */
  concurrency?: number;
  /** Claim lease: a claim not finished within it (crash) is taken up again. Default 15000. */
  leaseMs?: number;
  /** When the carrier cannot be reached, the chunk is tried again after this. Default 5000. */
  submitRetryMs?: number;
}

export interface DeliveryWorkerStats {
  claimed: number;
  sent: number;
  sendErrors: number;
  expired: number;
  receipts: number;
  receiptChanges: number;
}

export class DeliveryWorker {
  private readonly store: Store;
  private readonly commits: BatchCommits;
  private readonly carrier: Carrier;
  private readonly logger: Logger;
  private readonly instanceId: string;
  private readonly pollIntervalMs: number;
  private readonly chunkSize: number;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly submitRetryMs: number;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  /** Messages submitted by this instance whose submission is being recorded, by id. */
  private readonly recording = new Map<number, Promise<void>>();
  private readonly signal = new WakeSignal();
  private pollTimer: NodeJS.Timeout | undefined;
  private claimSeq = 0;
  private readonly counters: DeliveryWorkerStats = {
    claimed: 0,
    sent: 0,
    sendErrors: 0,
    expired: 0,
    receipts: 0,
    receiptChanges: 0,
  };

  constructor(options: DeliveryWorkerOptions) {
    this.store = options.store;
    this.commits = new BatchCommits(options.store.batches);
    this.carrier = options.carrier;
    this.logger = options.logger;
    this.instanceId = options.instanceId;
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    this.chunkSize = options.chunkSize ?? 1000;
    this.concurrency = Math.max(1, options.concurrency ?? 2);
    this.leaseMs = options.leaseMs ?? 15_000;
    this.submitRetryMs = options.submitRetryMs ?? 5_000;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.carrier.start((receipts) => this.handleReceipts(receipts));
    this.pollTimer = setInterval(() => this.wake(), this.pollIntervalMs);
    this.pollTimer.unref();
    this.signal.wake();
    this.loop = this.run();
    this.logger.info(
      { instanceId: this.instanceId, carrier: this.carrier.name },
      "delivery worker started",
    );
  }

  /** Stops claiming, finishes the chunks in flight, then stops the carrier. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    this.signal.release();
    await this.loop;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    await this.carrier.stop();
    this.logger.info({ instanceId: this.instanceId, ...this.counters }, "delivery worker stopped");
  }

  /** Looks for due work now (e.g. right after messages were inserted). */
  wake(): void {
    this.signal.wake();
  }

  stats(): DeliveryWorkerStats {
    return { ...this.counters };
  }

  /** The carrier's receipt handler: applies receipts; those not matched yet are to be offered again. */
  async handleReceipts(receipts: CarrierReceipt[]): Promise<ReceiptHandlerResult> {
    // A receipt can overtake the recording of its own submission (zero receipt delay): wait for
    // this instance's recordings of the messages concerned rather than send the receipt round again.
    const recordings = new Set<Promise<void>>();
    for (const r of receipts) {
      const recording = r.messageId === undefined ? undefined : this.recording.get(r.messageId);
      if (recording) recordings.add(recording);
    }
    if (recordings.size > 0) await Promise.allSettled([...recordings]);
    const updates = receipts.map((r) => {
      const update: ReceiptUpdate = { carrierId: r.carrierId, status: r.status };
      if (r.reason) update.reason = r.reason;
      if (r.messageId !== undefined) update.messageId = r.messageId;
      return update;
    });
    const result = await applyReceipts(this.store.messages, updates, new Date());
    this.counters.receipts += receipts.length;
    this.counters.receiptChanges += result.changed;
    if (result.retry.length > 0) {
      this.logger.debug(
        { count: result.retry.length },
        "receipts without a recorded submission yet",
      );
    }
    return { retry: result.retry };
  }

  private async run(): Promise<void> {
    while (this.running) {
      if (!(await this.signal.next())) continue;
      try {
        while (this.running && this.inFlight.size < this.concurrency) {
          const token = `${this.instanceId}:${++this.claimSeq}`;
          const chunk = await claimDueDeliveries(this.store.messages, {
            now: new Date(),
            limit: this.chunkSize,
            leaseMs: this.leaseMs,
            token,
            commits: this.commits,
          });
          if (chunk.length === 0) break;
          this.counters.claimed += chunk.length;
          const work: Promise<void> = this.process(chunk)
            .catch((error: unknown) => {
              // The claims run out and the messages are taken up again.
              this.logger.error({ err: error, count: chunk.length }, "delivery chunk failed");
            })
            .finally(() => {
              this.inFlight.delete(work);
              this.wake();
            });
          this.inFlight.add(work);
          if (chunk.length < this.chunkSize) break;
        }
      } catch (error) {
        this.logger.error({ err: error }, "claiming deliveries failed");
      }
    }
  }

  private async process(chunk: ClaimedMessage[]): Promise<void> {
    const now = new Date();
    const releases: Release[] = [];
    const toExpire: number[] = [];
    const toSubmit: ClaimedMessage[] = [];
    for (const message of chunk) {
      const live = message.status === "ACCEPTED" || message.status === "SENT";
      if (!live) releases.push({ id: message._id });
      else if (message.expiresAt.getTime() <= now.getTime()) toExpire.push(message._id);
      else if (message.status === "ACCEPTED") toSubmit.push(message);
      else releases.push({ id: message._id, dueAt: message.expiresAt });
    }
    if (toExpire.length > 0)
      this.counters.expired += await expireMessages(this.store.messages, toExpire, now);
    if (toSubmit.length > 0) await this.submit(toSubmit, releases);
    await releaseDeliveries(this.store.messages, releases);
  }

  private async submit(messages: ClaimedMessage[], releases: Release[]): Promise<void> {
    const parts: CarrierPart[] = [];
    for (const message of messages) {
      const segments =
        message.segments && message.segments.length > 0
          ? message.segments
          : [{ id: message._id, text: message.text }];
      segments.forEach((segment, partIndex) => {
        parts.push({
          messageId: message._id,
          partId: segment.id,
          partIndex,
          partCount: segments.length,
          to: message.to,
          from: message.from,
          text: segment.text,
        });
      });
    }
    let recorded: () => void = () => undefined;
    const recording = new Promise<void>((resolve) => {
      recorded = resolve;
    });
    for (const message of messages) this.recording.set(message._id, recording);
    try {
      await this.submitAndRecord(messages, parts, releases);
    } finally {
      for (const message of messages) {
        if (this.recording.get(message._id) === recording) this.recording.delete(message._id);
      }
      recorded();
    }
  }

  private async submitAndRecord(
    messages: ClaimedMessage[],
    parts: CarrierPart[],
    releases: Release[],
  ): Promise<void> {
    let results: SubmitResult[];
    try {
      results = await this.carrier.submit(parts);
      if (results.length !== parts.length) {
        throw new Error(`carrier answered ${results.length} results for ${parts.length} parts`);
      }
    } catch (error) {
      this.logger.warn(
        { err: error, count: messages.length },
        "carrier submit failed; retrying later",
      );
      const retryAt = new Date(Date.now() + this.submitRetryMs);
      for (const message of messages) releases.push({ id: message._id, dueAt: retryAt });
      return;
    }
    const perMessage = new Map<number, { carrierIds: string[]; error?: string }>();
    parts.forEach((part, i) => {
      const result = results[i];
      const entry = perMessage.get(part.messageId) ?? { carrierIds: [] };
      if (result?.ok) entry.carrierIds.push(result.carrierId);
      else entry.error ??= result?.error ?? "no result";
      perMessage.set(part.messageId, entry);
    });
    const outcomes: SubmissionOutcome[] = messages.map((message) => {
      const entry = perMessage.get(message._id) ?? { carrierIds: [], error: "no result" };
      const outcome: SubmissionOutcome = {
        id: message._id,
        carrierIds: entry.carrierIds,
        expiresAt: message.expiresAt,
      };
      if (entry.error !== undefined) outcome.error = entry.error;
      return outcome;
    });
    const recorded = await recordSubmissions(this.store.messages, outcomes, new Date());
    this.counters.sent += recorded.sent;
    this.counters.sendErrors += recorded.sendErrors;
  }
}
