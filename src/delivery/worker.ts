/**
 * The delivery worker (docs/design.md "Message lifecycle", "Scheduling: fair and prioritized"): moves
 * accepted messages through the carrier, fairly between accounts and by priority within one.
 *
 * - Pacing: it claims only what the carrier can take soon: the parts its window has free plus a
 *   little ahead (`claimAheadParts`) and, for a carrier with a throughput limit, the tokens of a
 *   bucket filled at that rate (claim-pacing.ts). The backlog stays in the database, where the next
 *   claim picks the best next work, instead of queueing in this process behind work claimed
 *   earlier. Claims stream through the carrier's window in runs (submission.ts), and each run's
 *   parts are free for the next round once its outcome is recorded.
 * - Fairness: each claim round (delivery/delivery-rounds.ts) takes turns on the due account lanes
 *   least recently served first (scheduling/lanes.ts) and gives each an equal share of the round;
 *   within an account, messages are taken in `deliveryAt` order, which ranks OTP, then single
 *   sends, then batches (domain/delivery-priority.ts), and its batches take turns
 *   (scheduling/batch-turns.ts). Several instances share the turn order through the database.
 * - Claims carry a lease (default 30 s: an election plus server selection), renewed while the work
 *   runs (scheduling/lease-keeper.ts); a crashed instance's claims come back when it runs out.
 * - Each claim is worked by `workClaim` (submission.ts): crash-safe submission, recording, expiry.
 * - Receipts from the carrier are applied by receipts.ts.
 *
 * The worker owns its carrier's lifecycle: `start` starts the carrier with the worker's receipt
 * handler, `stop` finishes the claims in flight and then stops the carrier.
 */

import type { Filter } from "mongodb";
import type { Logger } from "../logger.ts";
import { accountsWithOverdueWork } from "../scheduling/claims.ts";
import { FairLanes, LaneMarker } from "../scheduling/lanes.ts";
import { DEFAULT_LEASE_MS, LeaseKeeper } from "../scheduling/lease-keeper.ts";
import { WakeSignal } from "../scheduling/wake-signal.ts";
import type { Store } from "../store/database.ts";
import type { MessageDoc } from "../store/documents.ts";
import type { Carrier } from "./carrier.ts";
import { ClaimPacing } from "./claim-pacing.ts";
import { type ClaimedMessage, DELIVERY_QUEUE } from "./delivery-claims.ts";
import { type AccountHold, DeliveryRounds, type LaneClaim } from "./delivery-rounds.ts";
import { DueAlarm } from "./due-alarm.ts";
import { ReceiptHandler, type UnmatchedReceiptOptions } from "./receipts.ts";
import { type ClaimOutcome, partsOf, type SubmissionDeps, workClaim } from "./submission.ts";
import { SubmissionRecorder } from "./submission-recorder.ts";

/** Claim rounds running side by side at most. */
const ROUNDS_AT_ONCE = 2;
/**
 * Largest claim of one lane in one round by default (parts): newly due work waits for the round in
 * progress, and on a loaded database a claim of 500 took 100-600 ms (figure 6b, docs/decisions.md).
 */
const LARGEST_CLAIM_PARTS = 125;

export interface DeliveryWorkerOptions {
  store: Store;
  carrier: Carrier;
  logger: Logger;
  /** Distinguishes this instance's claims from other instances'. */
  instanceId: string;
  /** How often due work is looked for without a wake-up. Default 250. */
  pollIntervalMs?: number;
  /** Claim lease, renewed every third of it while the work runs. Default 30000 (DEFAULT_LEASE_MS). */
  leaseMs?: number;
  /** When the carrier cannot be reached, submissions pause this long. Default 5000. */
  submitRetryMs?: number;
  /** Account lanes served per claim round at most. Default 32. */
  lanesPerRound?: number;
  /**
   * Parts claimed beyond the carrier's window, waiting for a place in it: claiming (a few database
   * round trips) then runs ahead of the carrier instead of in its way. A newly due account waits
   * behind them, so a carrier with a throughput limit gets at most a tenth of a second of its
   * throughput (and no more than its window) by default; one without gets a quarter of its window
   * (at least 100).
   */
  claimAheadParts?: number;
  /**
   * Largest claim (parts) of one lane in one round. Default half the parts claimed at most, and no
   * more than LARGEST_CLAIM_PARTS.
   */
  maxClaimParts?: number;
  /** How often accounts with overdue work have their lanes marked again (crash repair). Default 5000. */
  overdueSweepMs?: number;
  /** The last check of claimed messages before the carrier (SubmissionDeps.screen). */
  screen?: SubmissionDeps["screen"];
  /** Accounts whose messages are held (suspended, closed); none when absent. */
  hold?: AccountHold;
  /** How receipts that matched no part are kept and matched again (receipts.ts). */
  unmatchedReceipts?: UnmatchedReceiptOptions;
  /**
   * The STOPs this instance has seen (opt-outs/stop-feed.ts): a message whose recipient sent STOP
   * after its claim's screen is not written (SubmissionDeps.stops).
   */
  stops?: SubmissionDeps["stops"];
  /**
   * With several carriers (docs/design.md "Routing, failover and prices"), one worker runs per carrier:
   * this carrier's name in the plan and which messages it claims now (those whose route's current
   * carrier it is, routing/carrier-health.ts). The worker records its name beside the parts' ids
   * and matches its receipts to its own parts only. Undefined: the one carrier takes everything.
   * `failedOver` is told of the messages it answered that their route meant for another carrier.
   */
  planCarrier?: {
    name: string;
    claims: () => Filter<MessageDoc>;
    failedOver?: (from: string, messages: number) => void;
  };
}

export interface DeliveryWorkerStats {
  claimed: number;
  sent: number;
  sendErrors: number;
  expired: number;
  receipts: number;
  receiptChanges: number;
  /** Receipts that matched no part when they came, kept to be matched later. */
  receiptsKept: number;
  /** Kept receipts that matched no part within the hold (10 minutes): dropped. */
  receiptsUnmatchedDropped: number;
  /**
   * Parts claimed again after a claim of them was cut off (a crash or a lost lease): at most the
   * claimed parts per crash, of which at most the window's had reached the carrier.
   */
  resubmittedParts: number;
}

export class DeliveryWorker {
  private readonly store: Store;
  private readonly carrier: Carrier;
  /** For logs: its name in the plan, else the adapter's. */
  private readonly carrierName: string;
  private readonly logger: Logger;
  private readonly instanceId: string;
  private readonly pollIntervalMs: number;
  private readonly leaseMs: number;
  private readonly submitRetryMs: number;
  private readonly overdueSweepMs: number;
  private readonly lanes: FairLanes;
  private readonly rounds: DeliveryRounds;
  private readonly marks: LaneMarker;
  private readonly leases: LeaseKeeper;
  /** The carrier's window, the parts claimed ahead of it, its throughput (claim-pacing.ts). */
  private readonly pacing: ClaimPacing;
  private readonly recorder: SubmissionRecorder;
  private readonly screen: SubmissionDeps["screen"];
  private readonly stops: SubmissionDeps["stops"];
  private readonly planCarrier: DeliveryWorkerOptions["planCarrier"];
  private readonly receipts: ReceiptHandler;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly signal = new WakeSignal();
  private pollTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  /** Wakes the worker when a lane's work comes due (DeliveryRounds' dueLater). */
  private readonly dueAlarm = new DueAlarm(() => this.wake());
  private pausedUntil = 0;
  /** Claim rounds running. */
  private roundsRunning = 0;
  private readonly counters: DeliveryWorkerStats = {
    claimed: 0,
    sent: 0,
    sendErrors: 0,
    expired: 0,
    receipts: 0,
    receiptChanges: 0,
    receiptsKept: 0,
    receiptsUnmatchedDropped: 0,
    resubmittedParts: 0,
  };

  constructor(options: DeliveryWorkerOptions) {
    this.store = options.store;
    this.carrier = options.carrier;
    this.logger = options.logger;
    this.instanceId = options.instanceId;
    this.pollIntervalMs = options.pollIntervalMs ?? 250;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.submitRetryMs = options.submitRetryMs ?? 5_000;
    this.screen = options.screen;
    this.stops = options.stops;
    this.pacing = new ClaimPacing(this.carrier.limits, options.claimAheadParts);
    const planCarrier = options.planCarrier;
    this.planCarrier = planCarrier;
    this.carrierName = planCarrier?.name ?? options.carrier.name;
    this.recorder = new SubmissionRecorder(
      options.store.messages,
      options.store.clock,
      (counts) => {
        this.counters.sent += counts.sent;
        this.counters.sendErrors += counts.sendErrors;
      },
      undefined,
      planCarrier?.name,
    );
    this.overdueSweepMs = options.overdueSweepMs ?? 5_000;
    this.lanes = new FairLanes(options.store.lanes, "delivery", options.store.clock);
    this.marks = new LaneMarker(options.store.lanes, (err) =>
      this.logger.warn({ err }, "marking lanes failed; the overdue sweep will"),
    );
    this.leases = new LeaseKeeper({
      messages: options.store.messages,
      queue: DELIVERY_QUEUE,
      clock: options.store.clock,
      leaseMs: this.leaseMs,
      onError: (err) => this.logger.warn({ err }, "renewing delivery leases failed"),
    });
    this.receipts = new ReceiptHandler(
      options.store,
      this.marks,
      this.counters,
      this.logger,
      planCarrier?.name,
      options.carrier.receiptRules,
      options.unmatchedReceipts,
    );
    this.rounds = new DeliveryRounds({
      store: options.store,
      lanes: this.lanes,
      marks: this.marks,
      instanceId: this.instanceId,
      leaseMs: this.leaseMs,
      lanesPerRound: Math.max(1, options.lanesPerRound ?? 32),
      maxClaimParts: Math.max(
        1,
        options.maxClaimParts ??
          Math.min(LARGEST_CLAIM_PARTS, Math.ceil(this.pacing.claimed.size / 2)),
      ),
      onClaim: (claim) => this.startClaim(claim),
      track: (work) => this.track(work),
      // A lane's next work due later (a scheduled send, quiet hours' end): woken then, not at
      // the next poll. The server clock's time, on this process's timer.
      dueLater: (at) => this.dueAlarm.add(at.getTime() - options.store.clock.nowMs() + Date.now()),
      ...(planCarrier && { filter: planCarrier.claims }),
      ...(options.hold && { hold: options.hold }),
    });
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.carrier.start((receipts) => this.receipts.handle(receipts));
    this.receipts.start();
    this.leases.start();
    this.pollTimer = setInterval(() => this.wake(), this.pollIntervalMs);
    this.pollTimer.unref();
    this.sweepTimer = setInterval(() => void this.markOverdueLanes(), this.overdueSweepMs);
    this.sweepTimer.unref();
    this.signal.wake();
    this.loop = this.run();
    this.logger.info(
      {
        instanceId: this.instanceId,
        carrier: this.carrierName,
        ...this.carrier.limits,
      },
      "delivery worker started",
    );
  }

  /** Stops claiming, finishes the claims in flight, then stops the carrier. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const timer of [this.pollTimer, this.sweepTimer, this.wakeTimer]) clearInterval(timer);
    this.dueAlarm.clear();
    this.signal.release();
    await this.loop;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    await this.leases.stop();
    await this.marks.flush();
    await this.carrier.stop();
    await this.receipts.stop();
    this.logger.info({ instanceId: this.instanceId, ...this.counters }, "delivery worker stopped");
  }

  /** Looks for due work now (e.g. right after messages were accepted). */
  wake(): void {
    this.signal.wake();
  }

  stats(): DeliveryWorkerStats {
    return { ...this.counters };
  }

  /** The carrier's receipt handler (exposed for tests). */
  handleReceipts: ReceiptHandler["handle"] = (receipts) => this.receipts.handle(receipts);

  private async run(): Promise<void> {
    while (this.running) {
      if (await this.signal.next()) this.startRounds();
    }
  }

  /**
   * Starts claim rounds while the carrier has room, two at a time: a round's database round trips
   * (half a dozen, slower on a loaded database) then overlap the next one's, instead of holding the
   * carrier below its rate. Each round reserves its budget from the window and the bucket first,
   * so rounds side by side never overrun them.
   */
  private startRounds(): void {
    while (this.running && this.roundsRunning < ROUNDS_AT_ONCE) {
      const pause = this.pausedUntil - Date.now();
      if (pause > 0) {
        this.wakeIn(pause);
        return;
      }
      const wait = this.pacing.nextRoundInMs();
      if (wait !== 0) {
        // The claimed parts at their bound are woken by the claim that frees them; an empty
        // bucket by a timer.
        if (wait !== undefined) this.wakeIn(wait);
        return;
      }
      const budget = this.pacing.budget();
      this.pacing.reserve(budget);
      this.roundsRunning++;
      let claimed = 0;
      this.track(
        this.rounds
          .claim(budget)
          .then((parts) => {
            claimed = parts;
          })
          .catch((error: unknown) =>
            this.logger.error({ err: error }, "claiming deliveries failed"),
          )
          .finally(() => {
            // The unused part of the reservation goes back; a round that found work looks again.
            this.pacing.settle(budget, claimed);
            this.roundsRunning--;
            if (claimed > 0) this.wake();
          }),
      );
      if (this.roundsRunning < ROUNDS_AT_ONCE && this.pacing.nextRoundInMs() !== 0) return;
    }
  }

  /** Background work of the worker that `stop` waits for; failures are logged. */
  private track(work: Promise<void>): void {
    const tracked: Promise<void> = work
      .catch((err: unknown) => this.logger.warn({ err }, "delivery background work failed"))
      .finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }

  private startClaim(claim: LaneClaim): void {
    const { token, messages } = claim;
    // Its parts were reserved by its round. Each run's come back once its outcome is recorded, so
    // a newly due lane's round waits for one run, not the whole claim; the rest when it ends.
    let parts = messages.reduce((sum, m) => sum + partsOf(m), 0);
    const runDone = (run: readonly ClaimedMessage[]) => () => {
      const done = run.reduce((sum, m) => sum + partsOf(m), 0);
      parts -= done;
      this.pacing.claimed.give(done);
      this.wake();
    };
    this.counters.claimed += messages.length;
    const leaseEnd = claim.claimedAt.getTime() + this.leaseMs;
    for (const message of messages) this.leases.hold(message._id, token, leaseEnd);
    // A part is written only while the claim surely holds its message (a third of the lease to
    // spare): a cancel takes a message only once its lease ended (services/cancel.ts).
    const margin = this.leaseMs / 3;
    const work: Promise<void> = workClaim(
      {
        messages: this.store.messages,
        carrier: this.carrier,
        clock: this.store.clock,
        window: this.pacing.window,
        recorder: this.recorder,
        submitting: (submitted, recorded) => {
          this.receipts.awaitRecording(submitted, recorded);
          recorded.then(runDone(submitted), runDone(submitted));
        },
        ...(this.screen && { screen: this.screen }),
        ...(this.stops && { stops: this.stops }),
        ...(this.planCarrier && { planCarrier: this.planCarrier.name }),
        ...(this.planCarrier?.failedOver && { failedOver: this.planCarrier.failedOver }),
      },
      {
        token,
        messages,
        now: this.store.clock.now(),
        live: (id) => this.leases.isLive(token, id, margin),
      },
      this.logger,
    )
      .then((outcome) => this.recordOutcome(messages, outcome))
      .catch((error: unknown) => {
        // The claims run out and the messages are taken up again.
        this.logger.error({ err: error, count: messages.length }, "delivery claim failed");
      })
      .finally(() => {
        this.pacing.claimed.give(parts);
        for (const message of messages) this.leases.release(message._id, token);
        this.inFlight.delete(work);
        this.wake();
      });
    this.inFlight.add(work);
  }

  private async recordOutcome(messages: ClaimedMessage[], outcome: ClaimOutcome): Promise<void> {
    this.counters.expired += outcome.expired;
    this.counters.resubmittedParts += outcome.resubmittedParts;
    if (outcome.resubmittedParts > 0) {
      this.logger.warn(
        { parts: outcome.resubmittedParts },
        "resubmitted parts whose earlier submission was cut off (crash or lost lease)",
      );
    }
    if (outcome.carrierDown) this.pausedUntil = Date.now() + this.submitRetryMs;
    // Status changes queued notifications; given-back work is due again in its lane.
    const now = this.store.clock.now();
    for (const accountId of new Set(messages.map((m) => m.accountId)))
      this.marks.mark(accountId, "notify", now);
    for (const { accountId, dueAt } of outcome.released)
      this.marks.mark(accountId, "delivery", dueAt);
    await this.marks.flush();
  }

  private wakeIn(ms: number): void {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = setTimeout(() => this.wake(), Math.max(1, ms));
    this.wakeTimer.unref();
  }

  /** Marks the lanes of accounts with overdue work: repairs a mark lost to a crash. */
  private async markOverdueLanes(): Promise<void> {
    try {
      const now = this.store.clock.now();
      const accounts = await accountsWithOverdueWork(
        this.store.messages,
        DELIVERY_QUEUE,
        now,
        this.overdueSweepMs,
      );
      if (accounts.length > 0) await this.lanes.markDue(accounts, now);
    } catch (error) {
      this.logger.warn({ err: error }, "overdue delivery sweep failed");
    }
  }
}
