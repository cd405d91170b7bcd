/**
 * The simulator carrier (default adapter of the carrier port). The outcome is chosen by the
 * destination number, per the design table (simulator-numbers.ts).
 *
 * `submit` waits `sendDelayMs` per call (a bulk submit is one round trip to the "SMSC"), then
 * answers; with `tps` (SMS_SIM_TPS) it first waits for the throughput the "operator" sold, part by
 * part, as a throttled SMSC link does. `window` is the parts it takes in flight (the SMPP window's twin). Receipts become due `receiptDelayMs` after the submission and are kept in their own
 * collection (`simulator_receipts`, written in bulk before `submit` answers), like a real SMSC that
 * keeps unacknowledged receipts and re-sends them: a restart of the service loses none. Several
 * instances share the collection (simulator-receipts.ts). An instance claims the receipts it kept
 * by id when they come due (an alarm for each due time, due-alarm.ts); its pump's read finds the
 * rest (other instances', those offered again, those kept before a restart). Batches that come due
 * while the handler still stores earlier ones are handed over beside them (`deliveriesAtOnce`).
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Collection, Db } from "mongodb";
import type { Logger } from "../logger.ts";
import { TokenBucket } from "../scheduling/throttle.ts";
import type {
  Carrier,
  CarrierLimits,
  CarrierPart,
  ReceiptHandler,
  SubmitResult,
} from "./carrier.ts";
import { DueAlarm } from "./due-alarm.ts";
import { simulatedOutcome } from "./simulator-numbers.ts";
import { type SimulatorReceiptDoc, SimulatorReceipts } from "./simulator-receipts.ts";

export interface SimulatorCarrierOptions {
  /** The service's database (`store.db`); the simulator keeps its receipts in `collectionName`. */
  db: Db;
  /** Delay of a submit call before it answers (SMS_SIM_SEND_DELAY_MS). Default 100. */
  sendDelayMs?: number;
  /** Parts per second accepted (SMS_SIM_TPS); undefined: unlimited. */
  tps?: number;
  /** Parts in flight at most (the worker's window). Default 500. */
  window?: number;
  /**
   * Record every submitted part (message id, part index, when the throughput admitted it) in
   * `simulator_submissions` before answering, so tests can count what reached the "carrier" (twice, after a crash). Default false.
   */
  logSubmissions?: boolean;
  /** Delay from submission to receipt (SMS_SIM_RECEIPT_DELAY_MS). Default 500. */
  receiptDelayMs?: number;
  /** How often due receipts are looked for besides the in-process timer. Default 500. */
  pollIntervalMs?: number;
  /** Receipts per handler call. Default 1000. */
  batchSize?: number;
  /**
   * Handler calls in flight at most. Default 4: while one batch waits for its submissions to be
   * recorded and stores its changes, receipts that came due since go in the next, as an SMSC
   * sends receipts within its window without waiting for the earlier ones' answers.
   */
  deliveriesAtOnce?: number;
  /** How long a delivered-but-unacknowledged receipt waits before it is offered again. Default 30000. */
  claimTimeoutMs?: number;
  /** Receipts the handler keeps asking to retry are dropped after this many offers. Default 20. */
  maxAttempts?: number;
  instanceId?: string;
  logger?: Logger;
  collectionName?: string;
}

/**
 * Receipts come due kept in memory at most, to be claimed by id; beyond (every delivery slot long
 * taken), the pump's read finds them.
 */
const MAX_KEPT_DUE = 100_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface SimulatorSubmissionDoc {
  messageId: number;
  partIndex: number;
  at: Date;
}

export class SimulatorCarrier implements Carrier {
  readonly name = "simulator";
  readonly limits: CarrierLimits;
  private readonly receipts: SimulatorReceipts;
  readonly submissions: Collection<SimulatorSubmissionDoc>;
  private readonly bucket: TokenBucket | undefined;
  private readonly logSubmissions: boolean;
  private readonly sendDelayMs: number;
  private readonly receiptDelayMs: number;
  private readonly pollIntervalMs: number;
  private readonly batchSize: number;
  private readonly logger: Logger | undefined;
  private handler: ReceiptHandler | undefined;
  private running = false;
  private pollTimer: NodeJS.Timeout | undefined;
  /**
   * Wakes the pump when this instance's receipts come due, with them: they are claimed by id, no
   * read (others', and those offered again, are found by the pump's read).
   */
  private readonly dueAlarm = new DueAlarm<SimulatorReceiptDoc>((kept) => {
    if (this.keptDue.length < MAX_KEPT_DUE) this.keptDue.push(...kept);
    this.pump();
  });
  /** This instance's receipts that came due, to be claimed by id. */
  private keptDue: SimulatorReceiptDoc[] = [];
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  private readonly deliveriesAtOnce: number;
  /** Handler calls in flight. */
  private readonly deliveries = new Set<Promise<void>>();
  private indexesReady: Promise<unknown> | undefined;

  constructor(options: SimulatorCarrierOptions) {
    this.receipts = new SimulatorReceipts(
      options.db.collection<SimulatorReceiptDoc>(options.collectionName ?? "simulator_receipts"),
      {
        claimTimeoutMs: options.claimTimeoutMs ?? 30_000,
        maxAttempts: options.maxAttempts ?? 20,
        instanceId: options.instanceId ?? randomUUID(),
        logger: options.logger,
      },
    );
    this.submissions = options.db.collection<SimulatorSubmissionDoc>("simulator_submissions");
    this.logSubmissions = options.logSubmissions ?? false;
    this.limits = { window: options.window ?? 500 };
    if (options.tps !== undefined) {
      this.limits.partsPerSecond = options.tps;
      // A fifth of a second saved up at most: the "operator" does not allow bursts above it.
      this.bucket = new TokenBucket(options.tps, Math.max(1, options.tps / 5));
    }
    this.sendDelayMs = options.sendDelayMs ?? 100;
    this.receiptDelayMs = options.receiptDelayMs ?? 500;
    this.pollIntervalMs = options.pollIntervalMs ?? 500;
    this.batchSize = options.batchSize ?? 1000;
    this.deliveriesAtOnce = Math.max(1, options.deliveriesAtOnce ?? 4);
    this.logger = options.logger;
  }

  /**
   * Waits until the throughput sold admits `count` parts, part by part as a throttled SMSC link
   * takes them (a long message too: its parts are spread at the rate, not let through at once);
   * returns when each was admitted.
   */
  private async admit(count: number): Promise<Date[]> {
    const admitted: Date[] = [];
    while (admitted.length < count) {
      const tokens = this.bucket ? this.bucket.available() : count;
      if (tokens < 1) {
        await sleep((this.bucket as TokenBucket).msUntil(1));
        continue;
      }
      const n = Math.min(tokens, count - admitted.length);
      this.bucket?.take(n);
      const at = new Date();
      for (let i = 0; i < n; i++) admitted.push(at);
    }
    return admitted;
  }

  async submit(parts: readonly CarrierPart[]): Promise<SubmitResult[]> {
    const admitted = await this.admit(parts.length);
    if (this.logSubmissions && parts.length > 0) {
      await this.submissions.insertMany(
        parts.map((p, i) => ({
          messageId: p.messageId,
          partIndex: p.partIndex,
          at: admitted[i] as Date,
        })),
      );
    }
    // The answer comes `sendDelayMs` from now; the receipts are stored meanwhile (before it, as an
    // SMSC keeps them), not after it: the answer waits for the longer of the two, not both.
    const now = new Date(Date.now() + this.sendDelayMs);
    const dueAt = new Date(now.getTime() + this.receiptDelayMs);
    const results: SubmitResult[] = [];
    const pending: SimulatorReceiptDoc[] = [];
    for (const part of parts) {
      const outcome = simulatedOutcome(part.to);
      if (outcome.kind === "SEND_ERROR") {
        results.push({ ok: false, error: "simulated submission failure" });
        continue;
      }
      const carrierId = `sim-${part.messageId}-${part.partIndex}-${randomBytes(4).toString("hex")}`;
      results.push({ ok: true, carrierId });
      if (outcome.kind === "DELIVERED") {
        pending.push({
          _id: carrierId,
          messageId: part.messageId,
          status: "DELIVERED",
          dueAt,
          createdAt: now,
          attempts: 0,
        });
      } else if (outcome.kind === "DELIVERY_ERROR") {
        pending.push({
          _id: carrierId,
          messageId: part.messageId,
          status: "DELIVERY_ERROR",
          reason: outcome.reason,
          dueAt,
          createdAt: now,
          attempts: 0,
        });
      }
    }
    await Promise.all([
      this.sendDelayMs > 0 ? sleep(this.sendDelayMs) : undefined,
      pending.length > 0 ? this.receipts.keep(pending) : undefined,
    ]);
    if (pending.length > 0 && this.running) this.dueAlarm.add(dueAt.getTime(), pending);
    return results;
  }

  async start(onReceipts: ReceiptHandler): Promise<void> {
    if (this.running) return;
    this.handler = onReceipts;
    this.running = true;
    this.indexesReady ??= this.receipts.ensureIndex();
    await this.indexesReady;
    this.pollTimer = setInterval(() => this.pump(), this.pollIntervalMs);
    this.pollTimer.unref();
    this.pump();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.dueAlarm.clear();
    this.keptDue = [];
    this.pollTimer = undefined;
    while (this.pumping || this.deliveries.size > 0)
      await Promise.allSettled([this.pumping, ...this.deliveries]);
  }

  /** Number of receipts not yet acknowledged (for tests and diagnostics). */
  async pendingReceipts(): Promise<number> {
    return this.receipts.pending();
  }

  private pump(): void {
    if (!this.running) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    // With every delivery slot taken, the next delivery to end looks again.
    if (this.deliveries.size >= this.deliveriesAtOnce) return;
    // `finally` runs after the assignment even when nothing is awaited.
    this.pumping = this.claimWhileRoom().finally(() => {
      this.pumping = undefined;
    });
  }

  /**
   * Claims due receipts and hands them on while delivery slots are free: claims go on while
   * earlier receipts are still with the handler (up to `deliveriesAtOnce` calls), so a receipt is
   * offered once due, not after the backlog ahead of it has been stored.
   */
  private async claimWhileRoom(): Promise<void> {
    try {
      do {
        this.pumpAgain = false;
        while (this.running && this.deliveries.size < this.deliveriesAtOnce) {
          const kept = this.keptDue.splice(0, this.batchSize);
          if (kept.length > 0) {
            const round = await this.receipts.claimKept(kept);
            if (round.claimed.length > 0) this.startDelivery(round.claimed, round.claim);
            if (this.keptDue.length > 0) continue;
            break;
          }
          const round = await this.receipts.claimDue(this.batchSize);
          if (round.claimed.length > 0) this.startDelivery(round.claimed, round.claim);
          if (round.due < this.batchSize) break; // not a full batch: nothing more due now
        }
      } while (this.running && this.pumpAgain && this.deliveries.size < this.deliveriesAtOnce);
    } catch (error) {
      this.logger?.error({ err: error }, "simulator: receipt delivery failed");
    }
  }

  /** Hands a claimed batch to the handler beside those in flight; when it is done, looks again. */
  private startDelivery(claimed: SimulatorReceiptDoc[], claim: string): void {
    const delivery: Promise<void> = this.deliver(claimed, claim)
      .catch((error: unknown) => {
        this.logger?.error({ err: error }, "simulator: receipt delivery failed");
      })
      .finally(() => {
        this.deliveries.delete(delivery);
        this.pump();
      });
    this.deliveries.add(delivery);
  }

  /** Hands claimed receipts to the handler and acknowledges them (or schedules their retry). */
  private async deliver(claimed: SimulatorReceiptDoc[], claim: string): Promise<void> {
    const handler = this.handler;
    if (!handler) return;
    let retry: string[];
    try {
      retry = (await handler(SimulatorReceipts.asReceipts(claimed, new Date()))).retry ?? [];
    } catch (error) {
      this.logger?.warn(
        { err: error, count: claimed.length },
        "simulator: receipt handler failed; receipts offered again later",
      );
      await this.receipts.offerAgainSoon(claimed, claim);
      return;
    }
    const retryAt = await this.receipts.settle(claimed, claim, retry);
    if (retryAt !== undefined && this.running) this.dueAlarm.add(retryAt);
  }
}
