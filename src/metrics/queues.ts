import { Gauge, type Registry } from "prom-client";
import { type DeliveryClass, HEAD_START_MS } from "../domain/delivery-priority.ts";
import type { Store } from "../store/database.ts";

// How far behind the queues are: due delivery work per class with its oldest item's wait, and
// pending webhook notifications with the oldest due one's wait. Both queues live in the messages
// collection and are shared by every instance, so every instance reports the same values (take
// max() across instances). Read by two aggregations over the due ranges of the `delivery_due`
// and `notify_due` indexes, at most once per SAMPLE_MS however often Prometheus scrapes. Their
// cost grows with the backlog (small when the service keeps up, see docs/scaling.md; 0.8-1.7 s
// of the emulator's CPU at 40000 due messages): a sample that took long spaces the next one out
// (SAMPLE_BUDGET), so the metrics never take more than a twentieth of the database's time when
// it is behind, which is when it has none to spare.

const SAMPLE_MS = 5_000;
/** The next sample waits at least this many times as long as the last one took. */
const SAMPLE_BUDGET = 20;
const CLASSES: readonly DeliveryClass[] = ["otp", "single", "batch"];

interface Sample {
  due: Map<DeliveryClass, { count: number; oldestAgeS: number }>;
  notifications: { due: number; retrying: number; oldestDueS: number };
}

export function queueMetrics(registry: Registry, store: Store): void {
  // One sampling at a time, shared by every gauge of a scrape and by concurrent scrapes.
  const sampler = new SpacedSampler(() => read(store));
  const current = () => sampler.current();
  const registers = [registry];
  new Gauge({
    name: "sms_delivery_due_messages",
    help: "Messages due for submission to the carrier (ACCEPTED, due now), by delivery class",
    labelNames: ["class"],
    registers,
    async collect() {
      const { due } = await current();
      for (const c of CLASSES) this.set({ class: c }, due.get(c)?.count ?? 0);
    },
  });
  new Gauge({
    name: "sms_delivery_oldest_due_age_seconds",
    help: "How long the oldest due message of each class has waited since it was accepted (or scheduled)",
    labelNames: ["class"],
    registers,
    async collect() {
      const { due } = await current();
      for (const c of CLASSES) this.set({ class: c }, due.get(c)?.oldestAgeS ?? 0);
    },
  });
  new Gauge({
    name: "sms_webhook_pending_notifications",
    help: "Messages with a pending status notification: due now, or waiting for a retry",
    labelNames: ["state"],
    registers,
    async collect() {
      const { notifications } = await current();
      this.set({ state: "due" }, notifications.due);
      this.set({ state: "retrying" }, notifications.retrying);
    },
  });
  new Gauge({
    name: "sms_webhook_oldest_pending_age_seconds",
    help: "How long the notification due the longest has been due (first attempts: since the status change)",
    registers,
    async collect() {
      this.set((await current()).notifications.oldestDueS);
    },
  });
}

/**
 * The last value of `read`, read again once it is older than SAMPLE_MS and than SAMPLE_BUDGET
 * times what the last reading took; one reading at a time.
 */
export class SpacedSampler<T> {
  private reading: Promise<T> | undefined;
  private last: { value: T; at: number; tookMs: number } | undefined;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  current(): Promise<T> {
    const { last } = this;
    if (last && this.now() - last.at < Math.max(SAMPLE_MS, SAMPLE_BUDGET * last.tookMs)) {
      return Promise.resolve(last.value);
    }
    if (!this.reading) {
      const started = this.now();
      this.reading = this.read()
        .then((value) => {
          const at = this.now();
          this.last = { value, at, tookMs: at - started };
          return value;
        })
        .finally(() => {
          this.reading = undefined;
        });
    }
    return this.reading;
  }
}

async function read(store: Store): Promise<Sample> {
  const now = store.clock.now();
  const nowMs = now.getTime();
  const [delivery, notify] = await Promise.all([
    store.messages
      .aggregate<{ _id: DeliveryClass | null; count: number; oldest: Date }>([
        { $match: { deliveryAt: { $lte: now }, status: "ACCEPTED" } },
        { $group: { _id: "$deliveryClass", count: { $sum: 1 }, oldest: { $min: "$deliveryAt" } } },
      ])
      .toArray(),
    store.messages
      .aggregate<{ _id: boolean; count: number; oldest: Date }>([
        { $match: { notifyAt: { $exists: true } } },
        {
          $group: {
            _id: { $lte: ["$notifyAt", now] },
            count: { $sum: 1 },
            oldest: { $min: "$notifyAt" },
          },
        },
      ])
      .toArray(),
  ]);
  const due = new Map<DeliveryClass, { count: number; oldestAgeS: number }>();
  for (const group of delivery) {
    // Messages stored before classes existed are single sends.
    const c = group._id ?? "single";
    // deliveryAt is the acceptance time less the class's head start (domain/delivery-priority.ts).
    const waitedMs = nowMs - (group.oldest.getTime() + HEAD_START_MS[c]);
    const known = due.get(c);
    due.set(c, {
      count: (known?.count ?? 0) + group.count,
      oldestAgeS: Math.max(known?.oldestAgeS ?? 0, waitedMs / 1000, 0),
    });
  }
  const dueNotes = notify.find((group) => group._id === true);
  const waiting = notify.find((group) => group._id === false);
  return {
    due,
    notifications: {
      due: dueNotes?.count ?? 0,
      retrying: waiting?.count ?? 0,
      oldestDueS: dueNotes ? Math.max(0, nowMs - dueNotes.oldest.getTime()) / 1000 : 0,
    },
  };
}
