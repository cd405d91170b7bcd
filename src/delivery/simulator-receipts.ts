/**
 * The simulator's receipts, kept like a real SMSC keeps the receipts it has not had acknowledged:
 * durable in their own collection (`simulator_receipts`), written before the submission is
 * answered, claimed in batches (token + claim timeout) by one of the instances sharing the
 * collection, deleted once the handler acknowledged them, offered again with a backoff when it
 * asked for that. The simulator carrier (simulator.ts) decides when to claim and hand them over.
 */

import type { Collection } from "mongodb";
import type { ReasonName } from "../domain/message-status.ts";
import type { Logger } from "../logger.ts";
import { idsIn } from "../store/id-ranges.ts";
import type { CarrierReceipt } from "./carrier.ts";

export interface SimulatorReceiptDoc {
  /** The carrier id of the part. */
  _id: string;
  messageId: number;
  status: "DELIVERED" | "DELIVERY_ERROR";
  reason?: ReasonName;
  dueAt: Date;
  createdAt: Date;
  /** Deliveries offered and not acknowledged so far. */
  attempts: number;
  claim?: string;
}

export interface ClaimedReceipts {
  /** How many were due (up to the batch size), whether or not this instance claimed them. */
  due: number;
  claimed: SimulatorReceiptDoc[];
  claim: string;
}

export class SimulatorReceipts {
  private claimSeq = 0;

  constructor(
    private readonly collection: Collection<SimulatorReceiptDoc>,
    private readonly options: {
      /** How long a delivered-but-unacknowledged receipt waits before it is offered again. */
      claimTimeoutMs: number;
      /** Receipts the handler keeps asking to retry are dropped after this many offers. */
      maxAttempts: number;
      instanceId: string;
      logger: Logger | undefined;
    },
  ) {}

  /** The index of `claimDue`'s reads; a failure is logged (the reads still work, slower). */
  async ensureIndex(): Promise<void> {
    await this.collection.createIndex({ dueAt: 1 }, { name: "due" }).catch((error: unknown) => {
      this.options.logger?.warn({ err: error }, "simulator: cannot create the receipts index");
    });
  }

  /** Receipts not yet acknowledged. */
  pending(): Promise<number> {
    return this.collection.countDocuments({});
  }

  /** Durable before the submission is answered: a receipt is never lost to a restart. */
  async keep(pending: SimulatorReceiptDoc[]): Promise<void> {
    if (pending.length > 0) await this.collection.insertMany(pending, { ordered: false });
  }

  /**
   * Claims up to `batchSize` due receipts. Returns how many were due and those this instance
   * claimed (another instance may have taken some).
   */
  async claimDue(batchSize: number): Promise<ClaimedReceipts> {
    const now = new Date();
    const due = await this.collection
      .find({ dueAt: { $lte: now } })
      .sort({ dueAt: 1 })
      .limit(batchSize)
      .toArray();
    return { due: due.length, ...(await this.take(due, now)) };
  }

  /**
   * Claims receipts this instance kept, now due, as it kept them: one round trip, no read (unless
   * another instance took some meanwhile, or they were offered since).
   */
  claimKept(kept: readonly SimulatorReceiptDoc[]): Promise<Omit<ClaimedReceipts, "due">> {
    return this.take(kept, new Date());
  }

  /** Claims those of `read` still due at `now`: `read` as claimed when the update took them all. */
  private async take(
    read: readonly SimulatorReceiptDoc[],
    now: Date,
  ): Promise<Omit<ClaimedReceipts, "due">> {
    const claim = `${this.options.instanceId}:${++this.claimSeq}`;
    if (read.length === 0) return { claimed: [], claim };
    const ids = read.map((d) => d._id);
    const { modifiedCount } = await this.collection.updateMany(
      { _id: idsIn(ids), dueAt: { $lte: now } },
      {
        $set: { dueAt: new Date(now.getTime() + this.options.claimTimeoutMs), claim },
        $inc: { attempts: 1 },
      },
    );
    // When the update took every one, the read is what was claimed (one round trip less, on the
    // path of every receipt); otherwise another instance took some: read again, keep ours.
    const claimed =
      modifiedCount === read.length
        ? read.map((doc) => ({ ...doc, claim, attempts: doc.attempts + 1 }))
        : (await this.collection.find({ _id: { $in: ids } }).toArray()).filter(
            (doc) => doc.claim === claim,
          );
    return { claimed, claim };
  }

  /** The receipts as the handler takes them. */
  static asReceipts(claimed: SimulatorReceiptDoc[], at: Date): CarrierReceipt[] {
    return claimed.map((doc) => {
      const receipt: CarrierReceipt = {
        carrierId: doc._id,
        messageId: doc.messageId,
        status: doc.status,
        at,
      };
      if (doc.reason) receipt.reason = doc.reason;
      return receipt;
    });
  }

  /** The handler failed: the whole claim is offered again in a second. */
  async offerAgainSoon(claimed: SimulatorReceiptDoc[], claim: string): Promise<void> {
    await this.collection.updateMany(
      { _id: idsIn(claimed.map((d) => d._id)), claim },
      { $set: { dueAt: new Date(Date.now() + 1000) } },
    );
  }

  /**
   * Deletes the acknowledged receipts and schedules those the handler asked to retry, with a
   * backoff; returns when the earliest retry is due (undefined: none).
   */
  async settle(
    claimed: SimulatorReceiptDoc[],
    claim: string,
    retry: readonly string[],
  ): Promise<number | undefined> {
    const { maxAttempts } = this.options;
    const retrySet = new Set(retry);
    const acked = claimed.filter((doc) => !retrySet.has(doc._id) || doc.attempts >= maxAttempts);
    const again = claimed.filter((doc) => retrySet.has(doc._id) && doc.attempts < maxAttempts);
    const ops = [];
    // By id alone (the emulator's index serves only filters on exactly `_id`): these are ours.
    if (acked.length > 0)
      ops.push({ deleteMany: { filter: { _id: { $in: acked.map((d) => d._id) } } } });
    // Backoff for receipts the worker cannot match yet: 0.5s, 1s, 2s ... capped at 30s.
    const byDelay = new Map<number, string[]>();
    for (const doc of again) {
      const delay = Math.min(30_000, 250 * 2 ** doc.attempts);
      byDelay.set(delay, [...(byDelay.get(delay) ?? []), doc._id]);
    }
    let earliest: number | undefined;
    for (const [delay, retryIds] of byDelay) {
      const dueAt = Date.now() + delay;
      ops.push({
        updateMany: {
          filter: { _id: idsIn(retryIds), claim },
          update: { $set: { dueAt: new Date(dueAt) } },
        },
      });
      earliest = Math.min(earliest ?? dueAt, dueAt);
    }
    const dropped = claimed.filter((doc) => retrySet.has(doc._id) && doc.attempts >= maxAttempts);
    if (dropped.length > 0) {
      this.options.logger?.warn(
        { carrierIds: dropped.map((d) => d._id) },
        "simulator: dropping receipts nobody claimed",
      );
    }
    if (ops.length > 0) await this.collection.bulkWrite(ops, { ordered: true });
    return earliest;
  }
}
