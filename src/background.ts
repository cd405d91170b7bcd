import type { FastifyBaseLogger } from "fastify";
import { settleAbandonedCharges } from "./store/charge-settler.ts";

type Logger = FastifyBaseLogger;

import type { Config } from "./config/config.ts";
import type { Carrier, CarrierStatus } from "./delivery/carrier.ts";
import {
  CarrierHealth,
  claimFilter,
  healthTracked,
  strandedRoutes,
} from "./delivery/routing/carrier-health.ts";
import type { SmppSettings } from "./delivery/routing/carrier-plan.ts";
import { SimulatorCarrier } from "./delivery/simulator.ts";
import { SmppCarrier } from "./delivery/smpp-carrier/adapter.ts";
import { DeliveryWorker, type DeliveryWorkerOptions } from "./delivery/worker.ts";
import type { InboundIntake } from "./inbound/intake.ts";
import type { Metrics } from "./metrics/metrics.ts";
import { UnsentPartsRefunder } from "./money/refunds.ts";
import { Notifier } from "./notifier/notifier.ts";
import type { Store } from "./store/database.ts";
import { keepMalformedPdu } from "./store/malformed-pdus.ts";

export interface BackgroundWork {
  /** Tells the delivery worker that new messages are waiting. */
  wake: () => void;
  /** Tells the notifier that inbound webhooks were queued. */
  wakeInbound: () => void;
  stop: () => Promise<void>;
  /** The carrier's name and state for /health; undefined when this instance runs no worker. */
  carrier: () => ({ name: string } & Partial<CarrierStatus>) | undefined;
}

/** The delivery worker (with its carrier) and the notifier of this instance, when the config runs them. */
export interface BackgroundDeps {
  config: Config;
  store: Store;
  instanceId: string;
  logger: FastifyBaseLogger;
  metrics?: Metrics | undefined;
  /** The delivery worker's last check before the carrier (opt-outs). */
  screen?: DeliveryWorkerOptions["screen"];
  /** Accounts whose messages the worker holds (suspended, closed). */
  hold?: DeliveryWorkerOptions["hold"];
  /** The STOPs seen since a claim's screen (opt-outs/stop-feed.ts), started with the worker. */
  stops?: DeliveryWorkerOptions["stops"] & { start(): Promise<void>; stop(): Promise<void> };
  /** Mobile-originated messages the carrier receives go here; its sweep runs with the worker. */
  inbound?: InboundIntake | undefined;
}

/**
 * This instance's background work across its life: started once the ports listen (never after a
 * close began), woken by new work, stopped by the close steps. Beside the worker and the notifier,
 * the settler of charges a crash left pending: confirmed or refunded, checked every 30 s or a
 * quarter of the cutoff when that is shorter (tests shorten SMS_SETTLE_AFTER_MS).
 */
export class BackgroundControl {
  private work: BackgroundWork | undefined;
  private closing = false;
  private settleTimer: NodeJS.Timeout | undefined;
  private refunder: UnsentPartsRefunder | undefined;

  constructor(private readonly deps: BackgroundDeps) {}

  async start(): Promise<void> {
    if (this.closing || this.work) return;
    const started = await startBackgroundWork(this.deps);
    // A close that began meanwhile has passed the step that stops it.
    if (this.closing) return started.stop();
    this.work = started;
    const { store, config, logger } = this.deps;
    this.settleTimer = setInterval(
      () => {
        settleAbandonedCharges(store, config.settleAfterMs, store.clock.now()).catch((err) =>
          logger.warn({ err }, "settling abandoned charges failed"),
        );
      },
      Math.min(30_000, config.settleAfterMs / 4),
    );
    // Parts no carrier accepted are refunded on every instance (docs/design.md "Money").
    this.refunder = new UnsentPartsRefunder(
      store,
      () => store.clock.now(),
      config.pricePerPartMicros,
      (err) => logger.warn({ err }, "refunding unsent parts failed; the next sweep will"),
    );
    this.refunder.start();
  }

  /** From the first moment of a close: no start after it. */
  refuseStart(): void {
    this.closing = true;
  }

  async stop(): Promise<void> {
    this.closing = true;
    clearInterval(this.settleTimer);
    await this.work?.stop();
    await this.refunder?.stop();
  }

  wake(): void {
    this.work?.wake();
  }

  wakeInbound(): void {
    this.work?.wakeInbound();
  }

  carrier(): ReturnType<BackgroundWork["carrier"]> {
    return this.work?.carrier();
  }
}

export async function startBackgroundWork(deps: BackgroundDeps): Promise<BackgroundWork> {
  const { config, store, instanceId } = deps;
  if (!config.runWorkers)
    return {
      wake: () => undefined,
      wakeInbound: () => undefined,
      stop: async () => undefined,
      carrier: () => undefined,
    };
  const logger = deps.logger.child({ component: "delivery" });
  // Before the first claim: a claim screened before a STOP this instance has not seen is held back.
  await deps.stops?.start();
  if (config.carriers.carriers.length > 1) return startPlanCarriers(deps, logger);
  let carrier: Carrier =
    config.carrier === "smpp" && config.smpp
      ? smppCarrier(deps, config.smpp, "smpp", logger)
      : simulatorCarrier(deps, { tps: config.simTps }, logger);
  // Counted and timed as the worker hands parts over (metrics/carrier.ts).
  if (deps.metrics) carrier = deps.metrics.carrier(carrier);
  const worker = new DeliveryWorker({
    store,
    carrier,
    logger,
    instanceId,
    ...(deps.screen && { screen: deps.screen }),
    ...(deps.hold && { hold: deps.hold }),
    ...(deps.stops && { stops: deps.stops }),
  });
  const notifier = startNotifier(deps);
  await worker.start();
  await notifier.start();
  deps.inbound?.start();
  return {
    wake: () => worker.wake(),
    wakeInbound: () => notifier.wakeInbound(),
    // With what the intake made of the carrier's MO (messages, redeliveries, numbers nobody owns).
    carrier: () => ({
      name: carrier.name,
      ...carrier.status?.(),
      ...(deps.inbound && { inbound: deps.inbound.stats() }),
    }),
    // The worker first, so its last status changes are still notified by a running notifier.
    stop: async () => {
      await worker.stop();
      await deps.stops?.stop();
      await deps.inbound?.stop();
      await notifier.stop();
    },
  };
}

function smppCarrier(
  deps: BackgroundDeps,
  smpp: SmppSettings,
  name: string,
  logger: Logger,
): Carrier {
  const inbound = deps.inbound;
  const { db } = deps.store;
  return new SmppCarrier({
    endpoint: smpp.endpoint,
    systemType: smpp.systemType,
    binds: smpp.binds,
    window: smpp.window,
    ...(smpp.tps !== undefined && { tps: smpp.tps }),
    enquireLinkMs: smpp.enquireLinkS * 1000,
    concatenation: smpp.concatenation,
    national: smpp.numbering,
    receiptIds: smpp.receiptIds,
    multipartReceipts: smpp.multipartReceipts,
    maxPduBytes: deps.config.smppMaxPduBytes,
    readTimeoutMs: deps.config.smppReadTimeoutS * 1000,
    // Named by the plan's carrier name, as the metrics are; the connection is in `endpoint`.
    keepMalformed: (pdu) =>
      keepMalformedPdu(db, {
        carrier: name,
        at: pdu.at,
        command: pdu.command,
        sequence: pdu.sequence,
        reason: `${pdu.reason} (${pdu.carrier})`,
        bytes: pdu.bytes,
      }),
    // expiresAt is on the database server's clock: the validity left is measured on it too.
    now: () => deps.store.clock.nowMs(),
    ...(inbound && { inbound: (parts) => inbound.take(parts) }),
    logger,
  });
}

function simulatorCarrier(
  deps: BackgroundDeps,
  settings: { tps: number | undefined; window?: number; collectionName?: string },
  logger: Logger,
): Carrier {
  return new SimulatorCarrier({
    db: deps.store.db,
    sendDelayMs: deps.config.simSendDelayMs,
    receiptDelayMs: deps.config.simReceiptDelayMs,
    ...(settings.tps !== undefined && { tps: settings.tps }),
    ...(settings.window !== undefined && { window: settings.window }),
    ...(settings.collectionName !== undefined && { collectionName: settings.collectionName }),
    instanceId: deps.instanceId,
    logger,
  });
}

/**
 * Several carriers (SMS_CARRIERS_FILE): each its own adapter (its binds, window and throughput)
 * and its own delivery worker, which claims only the messages whose route starts with it, so each
 * carrier's window is shared between accounts and by priority as one carrier's is. The default
 * route's first carrier also takes messages stored without a route. Simulators keep their
 * receipts apart (one collection each), so each worker reads only its own.
 */
async function startPlanCarriers(deps: BackgroundDeps, logger: Logger): Promise<BackgroundWork> {
  const plan = deps.config.carriers;
  const unrouted = plan.routes.at(-1)?.carriers[0];
  const carriers = plan.carriers.map((spec) => {
    const log = logger.child({ carrier: spec.name });
    return spec.kind === "smpp"
      ? smppCarrier(deps, spec.smpp, spec.name, log)
      : simulatorCarrier(
          deps,
          { ...spec.simulator, collectionName: `simulator_receipts.${spec.name}` },
          log,
        );
  });
  const healths = plan.carriers.map(
    (spec, i) =>
      new CarrierHealth(spec.name, plan.failover, () => (carriers[i] as Carrier).status?.().state),
  );
  // The carriers that get no new work: their waiting work goes to the next of its route.
  const down = () => new Set(healths.filter((h) => !h.healthy()).map((h) => h.name));
  const failovers = deps.metrics?.failovers(plan.carriers.map((spec) => spec.name));
  const workers = plan.carriers.map(
    (spec, i) =>
      new DeliveryWorker({
        store: deps.store,
        // Counted under its name in the plan (metrics/carrier.ts), its circuit and failover too.
        carrier: measured(
          deps,
          healthTracked(carriers[i] as Carrier, healths[i] as CarrierHealth),
          spec.name,
        ),
        logger: logger.child({ carrier: spec.name }),
        instanceId: deps.instanceId,
        planCarrier: {
          name: spec.name,
          claims: () => claimFilter(spec.name, plan.routes, down(), spec.name === unrouted),
          ...(failovers && {
            failedOver: (from: string, messages: number) => failovers(from, spec.name, messages),
          }),
        },
        ...(deps.screen && { screen: deps.screen }),
        ...(deps.hold && { hold: deps.hold }),
        ...(deps.stops && { stops: deps.stops }),
      }),
  );
  const notifier = startNotifier(deps);
  await Promise.all(workers.map((worker) => worker.start()));
  await notifier.start();
  deps.inbound?.start();
  return {
    wake: () => {
      for (const worker of workers) worker.wake();
    },
    wakeInbound: () => notifier.wakeInbound(),
    carrier: () => {
      const now = down();
      const each = plan.carriers.map((spec, i) => ({
        name: spec.name,
        ...(carriers[i] as Carrier).status?.(),
        circuit: (healths[i] as CarrierHealth).circuit(),
        takesWork: !now.has(spec.name),
      }));
      const stranded = strandedRoutes(plan.routes, now);
      return {
        name: "carriers",
        // Ready while every route has a carrier that takes work.
        state: stranded.length > 0 ? "unbound" : "bound",
        ...(stranded.length > 0 && { routesWithoutCarrier: stranded }),
        carriers: each,
        ...(deps.inbound && { inbound: deps.inbound.stats() }),
      };
    },
    stop: async () => {
      await Promise.all(workers.map((worker) => worker.stop()));
      await deps.stops?.stop();
      await deps.inbound?.stop();
      await notifier.stop();
    },
  };
}

function measured(deps: BackgroundDeps, carrier: Carrier, name: string): Carrier {
  return deps.metrics ? deps.metrics.carrier(carrier, name) : carrier;
}

function startNotifier(deps: BackgroundDeps): Notifier {
  const { config, store, instanceId } = deps;
  return new Notifier({
    store,
    logger: deps.logger.child({ component: "notifier" }),
    instanceId,
    retrySchedule: config.webhookRetryScheduleMs,
    timeoutMs: config.webhookTimeoutMs,
    concurrency: config.webhookConcurrency,
    receiverConcurrency: config.webhookReceiverConcurrency,
    accountConcurrency: config.webhookAccountConcurrency,
    allowPrivate: config.webhookAllowPrivate,
    secretOverlapMs: config.webhookSecretOverlapMs,
    ...(deps.metrics && { metrics: deps.metrics }),
  });
}
