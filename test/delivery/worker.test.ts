/**
 * The delivery worker against the simulator on a real database: claims, bulk recording, receipts,
 * expiry, several instances, a crashed instance's claims, a failing carrier, held batches.
 */

import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type {
  Carrier,
  CarrierPart,
  ReceiptHandler,
  SubmitResult,
} from "../../src/delivery/carrier.ts";
import { claimDueDeliveries } from "../../src/delivery/delivery-claims.ts";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import type { StatusName } from "../../src/domain/message-status.ts";
import { BatchCommits } from "../../src/store/batch-commits.ts";
import type { MessageDoc } from "../../src/store/documents.ts";
import type { NewMessage } from "../../src/store/messages.ts";
import { ServerClock } from "../../src/store/server-clock.ts";
import { changeStatus } from "../../src/store/status-changes.ts";
import { commitBatch } from "../support/batches.ts";
import {
  designedOutcome,
  eventually,
  insertMessages,
  nextTestId,
  testMessage,
} from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const logger = pino({ level: "silent" });
const fixture = useTestStore();
let nextCollection = 1;

const message = (to: string, extra: Partial<NewMessage> = {}) => testMessage("acct", to, extra);
const insert = (messages: NewMessage[], options: { at?: Date } = {}) =>
  insertMessages(fixture.store, messages, options.at);

const isFinal = (status: StatusName) =>
  status === "DELIVERED" || status === "SEND_ERROR" || status === "DELIVERY_ERROR";

async function allFinal(ids: number[]): Promise<boolean> {
  const docs = await fixture.store.messages
    .find({ _id: { $in: ids } }, { projection: { status: 1 } })
    .toArray();
  return docs.length === ids.length && docs.every((d) => isFinal(d.status));
}

/** A simulator that counts submissions per message (shared between instances through `counts`). */
class CountingCarrier implements Carrier {
  readonly name = "counting";
  get limits() {
    return this.inner.limits;
  }
  failNext = 0;
  constructor(
    private readonly inner: SimulatorCarrier,
    readonly counts: Map<number, number>,
  ) {}
  async submit(parts: readonly CarrierPart[]): Promise<SubmitResult[]> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error("carrier unreachable");
    }
    for (const p of parts)
      if (p.partIndex === 0) this.counts.set(p.messageId, (this.counts.get(p.messageId) ?? 0) + 1);
    return this.inner.submit(parts);
  }
  start(handler: ReceiptHandler) {
    return this.inner.start(handler);
  }
  stop() {
    return this.inner.stop();
  }
}

function simulator(collectionName: string, tag: string, window?: number) {
  return new SimulatorCarrier({
    ...(window !== undefined && { window }),
    db: fixture.store.db,
    sendDelayMs: 5,
    receiptDelayMs: 50,
    pollIntervalMs: 50,
    instanceId: tag,
    collectionName,
  });
}

function worker(
  carrier: Carrier,
  tag: string,
  extra: Partial<ConstructorParameters<typeof DeliveryWorker>[0]> = {},
) {
  return new DeliveryWorker({
    store: fixture.store,
    carrier,
    logger,
    instanceId: tag,
    pollIntervalMs: 50,
    ...extra,
  });
}

function expectDesigned(doc: MessageDoc): void {
  const want = designedOutcome(doc.to);
  expect({ status: doc.status, reason: doc.reason }, doc.to).toEqual({
    status: want.status,
    reason: want.reason,
  });
  const statuses = doc.notifications.map((n) => n.status);
  expect(statuses[0]).toBe("ACCEPTED");
  expect(statuses.at(-1)).toBe(doc.status);
  expect(statuses).toEqual(
    doc.status === "SEND_ERROR" ? ["ACCEPTED", "SEND_ERROR"] : ["ACCEPTED", "SENT", doc.status],
  );
  expect(doc.deliveryAt).toBeUndefined();
  expect(doc.deliveryLease).toBeUndefined();
}

describe("delivery worker", () => {
  it("two instances work a batch together: designed statuses, each message submitted once", async () => {
    const collection = `receipts_${nextCollection++}`;
    const counts = new Map<number, number>();
    const batch = Array.from({ length: 300 }, (_, i) =>
      message(`+999555${String(i).padStart(4, "0")}${i % 9}`, { batchId: 1 }),
    );
    // Stored but not committed yet: the batch document comes below.
    const ids = await insert(batch);
    // A small window, so that neither instance can take the whole batch between two polls of the
    // other.
    const a = worker(new CountingCarrier(simulator(collection, "sim-a", 10), counts), "worker-a");
    const b = worker(new CountingCarrier(simulator(collection, "sim-b", 10), counts), "worker-b");
    await a.start();
    await b.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(
        await fixture.store.messages.countDocuments({
          _id: { $in: ids },
          status: { $ne: "ACCEPTED" },
        }),
      ).toBe(0); // not committed
      await commitBatch(fixture.store, 1);
      a.wake();
      b.wake();
      await eventually(() => allFinal(ids.filter((_, i) => i % 9 !== 7)));
    } finally {
      await a.stop();
      await b.stop();
    }
    expect(a.stats().claimed).toBeGreaterThan(0);
    expect(b.stats().claimed).toBeGreaterThan(0);
    for (const id of ids) expect(counts.get(id), `submissions of ${id}`).toBe(1);
    const docs = await fixture.store.messages.find({ _id: { $in: ids } }).toArray();
    for (const doc of docs) {
      if (doc.to.endsWith("7")) {
        expect(doc.status).toBe("SENT"); // waiting for its receipt until the ttl runs out
        expect(doc.deliveryAt?.getTime()).toBe(doc.expiresAt.getTime());
      } else {
        expectDesigned(doc);
      }
    }
  });

  it("expires SENT-without-receipt messages shortly after their ttl", async () => {
    const collection = `receipts_${nextCollection++}`;
    const ids = await insert([
      message("+9995550007", { ttl: 1 }),
      message("+9995550017", { ttl: 2 }),
    ]);
    const w = worker(simulator(collection, "sim-exp"), "worker-exp");
    await w.start();
    try {
      await eventually(() => allFinal(ids));
    } finally {
      await w.stop();
    }
    for (const doc of await fixture.store.messages.find({ _id: { $in: ids } }).toArray()) {
      expect(doc.status).toBe("DELIVERY_ERROR");
      expect(doc.reason).toBe("Expired");
      expect(doc.notifications.map((n) => n.status)).toEqual([
        "ACCEPTED",
        "SENT",
        "DELIVERY_ERROR",
      ]);
      expect(doc.updatedAt.getTime()).toBeGreaterThanOrEqual(doc.expiresAt.getTime());
    }
  });

  it("multi-part messages: DELIVERED when every part is, the reason of a failed part otherwise", async () => {
    const collection = `receipts_${nextCollection++}`;
    const segments = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        id: 5000 + nextTestId() * 10 + i,
        text: `part ${i}`,
      }));
    const ok = message("+15550001234", { parts: 4, segments: segments(4) });
    const failed = message("+9995551235", { parts: 3, segments: segments(3) });
    const sendError = message("+9995551231", { parts: 2, segments: segments(2) });
    const ids = await insert([ok, failed, sendError]);
    const parts: CarrierPart[] = [];
    const inner = simulator(collection, "sim-multi");
    const carrier: Carrier = {
      name: "recording",
      limits: inner.limits,
      submit: async (p) => {
        parts.push(...p);
        return inner.submit(p);
      },
      start: (h) => inner.start(h),
      stop: () => inner.stop(),
    };
    const w = worker(carrier, "worker-multi");
    await w.start();
    try {
      await eventually(() => allFinal(ids));
    } finally {
      await w.stop();
    }
    const byId = new Map(
      (await fixture.store.messages.find({ _id: { $in: ids } }).toArray()).map((d) => [d._id, d]),
    );
    expect(byId.get(ok.id)?.status).toBe("DELIVERED");
    expect(byId.get(ok.id)?.carrierIds).toHaveLength(4);
    expect(byId.get(ok.id)?.deliveredParts).toHaveLength(4);
    expect(byId.get(failed.id)).toMatchObject({ status: "DELIVERY_ERROR", reason: "Unroutable" });
    expect(byId.get(sendError.id)?.status).toBe("SEND_ERROR");
    for (const doc of byId.values()) expectDesigned(doc);
    const okParts = parts.filter((p) => p.messageId === ok.id);
    expect(okParts.map((p) => [p.partId, p.partIndex, p.partCount, p.text])).toEqual(
      (ok.segments ?? []).map((s, i) => [s.id, i, 4, s.text]),
    );
  });

  it("takes up the claims of a crashed instance once its lease runs out", async () => {
    const collection = `receipts_${nextCollection++}`;
    const ids = await insert(
      Array.from({ length: 40 }, (_, i) => message(`+1555000${String(i).padStart(4, "0")}`)),
    );
    // A "crashed" instance claimed them and never came back.
    const claimed = await claimDueDeliveries(fixture.store.messages, {
      now: new Date(),
      limit: 1000,
      leaseMs: 800,
      token: "crashed:1",
      commits: new BatchCommits(fixture.store.batches),
    });
    expect(claimed.map((m) => m._id)).toEqual(expect.arrayContaining(ids));
    const w = worker(simulator(collection, "sim-crash"), "worker-after-crash");
    await w.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(
        await fixture.store.messages.countDocuments({ _id: { $in: ids }, status: "ACCEPTED" }),
      ).toBe(ids.length);
      await eventually(() => allFinal(ids));
    } finally {
      await w.stop();
    }
    for (const doc of await fixture.store.messages.find({ _id: { $in: ids } }).toArray())
      expectDesigned(doc);
  });

  it("tries a chunk again later when the carrier cannot be reached", async () => {
    const collection = `receipts_${nextCollection++}`;
    const counts = new Map<number, number>();
    const carrier = new CountingCarrier(simulator(collection, "sim-down"), counts);
    carrier.failNext = 2;
    const ids = await insert([message("+15550009001"), message("+9995559002")]);
    const w = worker(carrier, "worker-down", { submitRetryMs: 100 });
    await w.start();
    try {
      await eventually(() => allFinal(ids));
    } finally {
      await w.stop();
    }
    expect(carrier.failNext).toBe(0);
    for (const doc of await fixture.store.messages.find({ _id: { $in: ids } }).toArray())
      expectDesigned(doc);
  });

  it("expires a message never sent within its ttl without submitting it", async () => {
    const collection = `receipts_${nextCollection++}`;
    const counts = new Map<number, number>();
    const ids = await insert([message("+15550009100", { ttl: 1 })], {
      at: new Date(Date.now() - 2000),
    });
    const w = worker(new CountingCarrier(simulator(collection, "sim-late"), counts), "worker-late");
    await w.start();
    try {
      await eventually(() => allFinal(ids));
    } finally {
      await w.stop();
    }
    const doc = await fixture.store.messages.findOne({ _id: ids[0] });
    expect(doc).toMatchObject({ status: "DELIVERY_ERROR", reason: "Expired" });
    expect(doc?.notifications.map((n) => n.status)).toEqual(["ACCEPTED", "DELIVERY_ERROR"]);
    expect(counts.size).toBe(0);
  });
});

describe("status change with its notification", () => {
  it("queues behind a pending notification, or is due at once when none is pending", async () => {
    const now = new Date();
    const [waiting, idle] = await insert([message("+15550009201"), message("+15550009202")]);
    const later = new Date(now.getTime() + 60_000);
    // `waiting` has its ACCEPTED notification in backoff; `idle` has sent it already.
    await fixture.store.messages.updateOne(
      { _id: waiting },
      { $set: { notifyAt: later, "notifications.0.nextAttemptAt": later } },
    );
    await fixture.store.messages.updateOne(
      { _id: idle },
      { $set: { "notifications.0.state": "delivered" }, $unset: { notifyAt: "" } },
    );
    const changed = await changeStatus(
      fixture.store.messages,
      [waiting as number, idle as number],
      ["ACCEPTED"],
      { status: "SENT" },
      now,
    );
    expect(changed).toBe(2);
    const w = await fixture.store.messages.findOne({ _id: waiting });
    const i = await fixture.store.messages.findOne({ _id: idle });
    expect(w?.notifyAt?.getTime()).toBe(later.getTime());
    expect(i?.notifyAt?.getTime()).toBe(now.getTime());
    expect(w?.notifications.map((n) => [n.status, n.state])).toEqual([
      ["ACCEPTED", "pending"],
      ["SENT", "pending"],
    ]);
    expect(i?.notifications.map((n) => [n.status, n.state])).toEqual([
      ["ACCEPTED", "delivered"],
      ["SENT", "pending"],
    ]);
    // a status change only applies from the expected status
    expect(
      await changeStatus(
        fixture.store.messages,
        [idle as number],
        ["ACCEPTED"],
        { status: "SEND_ERROR" },
        now,
      ),
    ).toBe(0);
  });
});

describe("clocks", () => {
  it("an instance whose clock runs 20 s fast leaves another instance's 10 s lease alone", async () => {
    const collection = `receipts_${nextCollection++}`;
    const ids = await insert([message("+15550009301"), message("+15550009302")]);
    // Another instance holds them, leased for 10 s by the server's clock.
    await claimDueDeliveries(fixture.store.messages, {
      now: new Date(),
      limit: 10,
      leaseMs: 10_000,
      token: "other:1",
      commits: new BatchCommits(fixture.store.batches),
      filter: { _id: { $in: ids } },
    });
    const skewed = new ServerClock(fixture.store.db, () => Date.now() + 20_000);
    await skewed.sync();
    const counts = new Map<number, number>();
    // The worker reads every time from the store's clock.
    const fast = new DeliveryWorker({
      store: { ...fixture.store, clock: skewed },
      carrier: new CountingCarrier(simulator(collection, "sim-skew-2"), counts),
      logger,
      instanceId: "worker-fast-clock",
      pollIntervalMs: 50,
    });
    await fast.start();
    try {
      await new Promise((resolve) => setTimeout(resolve, 1500));
    } finally {
      await fast.stop();
    }
    // (other tests' leftovers in this database may be claimed: only these two matter)
    for (const id of ids) expect(counts.get(id)).toBeUndefined();
    expect(
      await fixture.store.messages.countDocuments({
        _id: { $in: ids },
        "deliveryLease.owner": "other:1",
      }),
    ).toBe(2);
  });
});
