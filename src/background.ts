import type { FastifyBaseLogger } from "fastify";
import type { Config } from "./config/config.ts";
import { SimulatorCarrier } from "./delivery/simulator.ts";
import { DeliveryWorker } from "./delivery/worker.ts";
import { Notifier } from "./notifier/notifier.ts";
import type { Store } from "./store/database.ts";

export interface BackgroundWork {
  /** Tells the delivery worker that new messages are waiting. */
  wake: () => void;
  stop: () => Promise<void>;
}

/** The delivery worker (with its carrier) and the notifier of this instance, when the config runs them. */
export async function startBackgroundWork(deps: {
  config: Config;
  store: Store;
  instanceId: string;
  logger: FastifyBaseLogger;
}): Promise<BackgroundWork> {
  const { config, store, instanceId } = deps;
  if (!config.runWorkers) return { wake: () => undefined, stop: async () => undefined };
  const logger = deps.logger.child({ component: "delivery" });
  const carrier = new SimulatorCarrier({
    db: store.db,
    sendDelayMs: config.simSendDelayMs,
    receiptDelayMs: config.simReceiptDelayMs,
    ...(config.simTps !== undefined && { tps: config.simTps }),
    instanceId,
    logger,
  });
  const worker = new DeliveryWorker({ store, carrier, logger, instanceId });
  const notifier = new Notifier({
    store,
    logger: deps.logger.child({ component: "notifier" }),
    instanceId,
    retrySchedule: config.webhookRetryScheduleMs,
    timeoutMs: config.webhookTimeoutMs,
    concurrency: config.webhookConcurrency,
    receiverConcurrency: config.webhookReceiverConcurrency,
    accountConcurrency: config.webhookAccountConcurrency,
    allowPrivate: config.webhookAllowPrivate,
  });
  await worker.start();
  await notifier.start();
  return {
    wake: () => worker.wake(),
    // The worker first, so its last status changes are still notified by a running notifier.
    stop: async () => {
      await worker.stop();
      await notifier.stop();
    },
  };
}
