import type { FastifyBaseLogger } from "fastify";
import type { Config } from "./config/config.ts";
import type { Carrier, CarrierStatus } from "./delivery/carrier.ts";
import { SimulatorCarrier } from "./delivery/simulator.ts";
import { SmppCarrier } from "./delivery/smpp/adapter.ts";
import { DeliveryWorker, type DeliveryWorkerOptions } from "./delivery/worker.ts";
import type { InboundIntake } from "./inbound/intake.ts";
import type { Metrics } from "./metrics/metrics.ts";
import { Notifier } from "./notifier/notifier.ts";
import type { Store } from "./store/database.ts";

export interface BackgroundWork {
  /** Tells the delivery worker that new messages are waiting. */
  wake: () => void;
  stop: () => Promise<void>;
  /** The carrier's name and state for /health; undefined when this instance runs no worker. */
  carrier: () => ({ name: string } & Partial<CarrierStatus>) | undefined;
}

/** The delivery worker (with its carrier) and the notifier of this instance, when the config runs them. */
export async function startBackgroundWork(deps: {
  config: Config;
  store: Store;
  instanceId: string;
  logger: FastifyBaseLogger;
  metrics?: Metrics | undefined;
  /** The delivery worker's last check before the carrier (opt-outs). */
  screen?: DeliveryWorkerOptions["screen"];
  /** Mobile-originated messages the carrier receives go here; its sweep runs with the worker. */
  inbound?: InboundIntake | undefined;
}): Promise<BackgroundWork> {
  const { config, store, instanceId } = deps;
  if (!config.runWorkers)
    return { wake: () => undefined, stop: async () => undefined, carrier: () => undefined };
  const logger = deps.logger.child({ component: "delivery" });
  let carrier: Carrier;
  if (config.carrier === "smpp" && config.smpp) {
    const smpp = config.smpp;
    carrier = new SmppCarrier({
      endpoint: smpp.endpoint,
      systemType: smpp.systemType,
      binds: smpp.binds,
      window: smpp.window,
      ...(smpp.tps !== undefined && { tps: smpp.tps }),
      enquireLinkMs: smpp.enquireLinkS * 1000,
      concatenation: smpp.concatenation,
      // expiresAt is on the database server's clock: the validity left is measured on it too.
      now: () => store.clock.nowMs(),
      ...(deps.inbound && { inbound: (parts) => (deps.inbound as InboundIntake).take(parts) }),
      logger,
    });
  } else {
    carrier = new SimulatorCarrier({
      db: store.db,
      sendDelayMs: config.simSendDelayMs,
      receiptDelayMs: config.simReceiptDelayMs,
      ...(config.simTps !== undefined && { tps: config.simTps }),
      instanceId,
      logger,
    });
  }
  // Counted and timed as the worker hands parts over (metrics/carrier.ts).
  if (deps.metrics) carrier = deps.metrics.carrier(carrier);
  const worker = new DeliveryWorker({
    store,
    carrier,
    logger,
    instanceId,
    ...(deps.screen && { screen: deps.screen }),
  });
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
    ...(deps.metrics && { metrics: deps.metrics }),
  });
  await worker.start();
  await notifier.start();
  deps.inbound?.start();
  return {
    wake: () => worker.wake(),
    // With what the intake made of the carrier's MO (messages, redeliveries, numbers nobody owns).
    carrier: () => ({
      name: carrier.name,
      ...carrier.status?.(),
      ...(deps.inbound && { inbound: deps.inbound.stats() }),
    }),
    // The worker first, so its last status changes are still notified by a running notifier.
    stop: async () => {
      await worker.stop();
      await deps.inbound?.stop();
      await notifier.stop();
    },
  };
}
