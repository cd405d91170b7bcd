import { Gauge, type Registry } from "prom-client";
import { type DeliveryClass, HEAD_START_MS } from "../domain/delivery-priority.ts";
import type { Store } from "../store/database.ts";

// How far behind the queues are: due delivery work per class with its oldest item's wait, and
// pending webhook notifications with the oldest due one's wait. Both queues live in the messages
// collection and are shared by every instance, so every instance reports the same values (take
// max() across instances). Read by two aggregations over the due ranges of the `delivery_due`
// and `notify_due` indexes, at most once per SAMPLE_MS however often Prometheus scrapes; their
// cost grows with the backlog, which is small when the service keeps up (see docs/scaling.md).

const SAMPLE_MS = 5_000;
const CLASSES: readonly DeliveryClass[] = ["otp", "single", "batch"];

interface Sample {
  at: number;
  due: Map<DeliveryClass, { count: number; oldestAgeS: number }>;
  notifications: { due: number; retrying: number; oldestDueS: number };
}

export function queueMetrics(registry: Registry, store: Store): void {
  let sample: Promise<Sample> | undefined;
  let last: Sample | undefined;
  // One sampling per SAMPLE_MS, shared by every gauge of a scrape and by concurrent scrapes.
  const current = (): Promise<Sample> => {
    if (last && Date.now() - last.at < SAMPLE_MS) return Promise.resolve(last);
    sample ??= read(store)
      .then((read) => {
        last = read;
        return read;
      })
      .finally(() => {
        sample = undefined;
      });
    return sample;
  };
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
    at: Date.now(),
    due,
    notifications: {
      due: dueNotes?.count ?? 0,
      retrying: waiting?.count ?? 0,
      oldestDueS: dueNotes ? Math.max(0, nowMs - dueNotes.oldest.getTime()) / 1000 : 0,
    },
  };
}
