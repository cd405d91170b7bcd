/** The background work of one instance on a test database, whatever the carrier. */
import { pino } from "pino";
import type { Carrier } from "../../src/delivery/carrier.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import { Notifier } from "../../src/notifier/notifier.ts";
import type { Store } from "../../src/store/database.ts";

/** A delivery worker and a notifier on `carrier`, as an instance runs them (background.ts). */
export function deliveryService(store: Store, carrier: Carrier, tag: string) {
  const logger = pino({ level: "silent" });
  const worker = new DeliveryWorker({
    store,
    carrier,
    logger,
    instanceId: `worker-${tag}`,
    pollIntervalMs: 100,
  });
  const notifier = new Notifier({
    store,
    logger,
    instanceId: `notifier-${tag}`,
    retrySchedule: [100, 200],
    timeoutMs: 2000,
    allowPrivate: true,
    sweepIntervalMs: 200,
  });
  return {
    worker,
    notifier,
    async start() {
      await worker.start();
      await notifier.start();
    },
    async stop() {
      await worker.stop();
      await notifier.stop();
    },
  };
}
