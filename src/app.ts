import { randomUUID } from "node:crypto";
import type http2 from "node:http2";
import { createClient } from "@connectrpc/connect";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, FastifyServerOptions } from "fastify";
import type { Db } from "mongodb";
import { AdminService } from "../gen/sms/admin/v1/admin_pb.ts";
import { apiKeysCollection, ensureApiKeyIndexes } from "./accounts/api-keys.ts";
import { auditLogCollection, ensureAuditIndexes } from "./accounts/audit-log.ts";
import { carrierStatesCollection, writeCarrierState } from "./accounts/carrier-states.ts";
import { HeldMessages } from "./accounts/held-messages.ts";
import { KeyUseRecorder } from "./accounts/key-use.ts";
import { ensureRejectionIndexes, rejectionsCollection } from "./accounts/sender-name-rejections.ts";
import { BackgroundControl } from "./background.ts";
import type { Config } from "./config/config.ts";
import { grpcServer } from "./connections/grpc-server.ts";
import { consoleServer } from "./console/console.ts";
import { dashboardRoutes } from "./dashboard/dashboard.ts";
import { DueAlarm } from "./delivery/due-alarm.ts";
import { Routing } from "./delivery/routing/routing.ts";
import { DEFAULT_RISK } from "./domain/risk-settings.ts";
import { IdempotencyKeys } from "./idempotency/idempotent-calls.ts";
import { KeyStore } from "./idempotency/key-store.ts";
import { InboundIntake } from "./inbound/intake.ts";
import { runCloseSteps } from "./lifecycle/close-steps.ts";
import { refuseWhileClosing } from "./lifecycle/draining.ts";
import { type HealthReport, healthRoutes } from "./lifecycle/health.ts";
import { createMetrics, type Metrics } from "./metrics/metrics.ts";
import { type RiskEventDoc, RiskEvents, TollFraudGuard } from "./money/toll-fraud-guard.ts";
import { InboundWebhookQueue } from "./notifier/inbound-queue.ts";
import { ensureOptOutIndexes, openOptOuts } from "./opt-outs/list.ts";
import { OptOutReads } from "./opt-outs/list-reads.ts";
import { OptOutRules } from "./opt-outs/rules.ts";
import { StopFeed } from "./opt-outs/stop-feed.ts";
import { LargeBodySlots } from "./rate-limits/large-bodies.ts";
import { RateLimits } from "./rate-limits/rate-limits.ts";
import { trackRequests } from "./request-context.ts";
import { apiKeyRoutes } from "./rest/api-keys.ts";
import { registerBodyParsers } from "./rest/body-parsers.ts";
import { registerErrorHandler, registerNotFoundHandler } from "./rest/error-handler.ts";
import { httpServer } from "./rest/http-server.ts";
import { inboundRoutes } from "./rest/inbound.ts";
import { messageRoutes } from "./rest/messages.ts";
import { moneyRoutes } from "./rest/money.ts";
import { optOutRoutes } from "./rest/opt-outs.ts";
import { quietHoursRoutes } from "./rest/quiet-hours.ts";
import { senderNameRoutes } from "./rest/sender-names.ts";
import { inProcessClients, inProcessTransport } from "./rest/service-clients.ts";
import { rpcRequests } from "./rpc/call-requests.ts";
import { callerCheck } from "./rpc/caller-check.ts";
import { refuseForeignRequests } from "./rpc/foreign-requests.ts";
import { rpcHandlerOptions } from "./rpc/handler-options.ts";
import { fastifyAdapter, nodeAdapter } from "./rpc/node-adapter.ts";
import { LaneMarker } from "./scheduling/lanes.ts";
import { AccountDirectory } from "./services/account-directory.ts";
import { routes } from "./services/routes.ts";
import { ChargeConfirmations } from "./store/charge-confirmations.ts";
import { DashboardSessions } from "./store/dashboard-sessions.ts";
import { durable, openStore, type Store } from "./store/database.ts";
import { ensureIndexes } from "./store/indexes.ts";
import { MessageWriter } from "./store/message-writer.ts";
import { numbersCollection } from "./store/numbers.ts";
import { IdAllocator } from "./store/sequences.ts";
import { traceCalls, traceRequests } from "./tracing/request-spans.ts";
import { tracingActive } from "./tracing/tracing.ts";

export interface BuildOptions {
  config: Config;
  db: Db;
  logger?: FastifyServerOptions["logger"];
}

export interface Service {
  /** HTTP/1.1: REST, Connect and gRPC-Web. Not listening yet. */
  app: FastifyInstance;
  /** HTTP/2 cleartext: gRPC and Connect. Not listening yet; closed with `app`. */
  grpc: http2.Http2Server;
  store: Store;
  /** The metrics, when METRICS_PORT is not 0; main.ts serves them on that port. */
  metrics: Metrics | undefined;
  /** The operator's console, when OPERATOR_PORT is not 0; main.ts listens on that port. */
  console: FastifyInstance | undefined;
  /** Readiness with its details, for the operator: main.ts serves it on METRICS_PORT. */
  health: () => Promise<HealthReport>;
  /**
   * Starts the background work this instance runs (delivery worker and carrier, notifier, the
   * settler of abandoned charges). main.ts calls it once every port listens, so a start that
   * fails has started none of it; not at all after close().
   */
  startBackground: () => Promise<void>;
}

/** Assembles the service on a database without listening, so tests can use real sockets on port 0. */
export async function build({ config, db, logger }: BuildOptions): Promise<Service> {
  const metrics = config.metricsPort !== 0 ? createMetrics(db) : undefined;
  const store = await openServiceStore(db, metrics);
  const idempotencyKeys = await openIdempotencyKeys(store, config);
  await store.clock.start();
  // The queues' depth where workers run; an API-only instance would only repeat their values, at
  // the database's expense.
  if (metrics && config.runWorkers) metrics.reportQueues(store);

  const app = httpServer(config, logger);
  const log = app.log;
  // First of the onRequest hooks: nothing else runs for a request refused while closing.
  const draining = refuseWhileClosing(app);
  // Then the request's context, which puts its reqId on every log line written while serving it.
  trackRequests(app);
  if (tracingActive()) traceRequests(app);
  metrics?.requests.observe(app);

  const apiKeys = apiKeysCollection(store.db);
  const directory = new AccountDirectory(
    store.accounts,
    store.senderNames,
    numbersCollection(store.db),
    apiKeys,
  );
  const keyUse = new KeyUseRecorder(store.accounts, apiKeys, (err) =>
    log.warn({ err }, "recording a key's last use failed"),
  );
  const confirmations = new ChargeConfirmations(store, (err) =>
    log.warn({ err }, "confirming charges failed; the settler will"),
  );
  // Accepted work is scheduled in its account's lanes before the answer (see scheduling/lanes.ts).
  const lanes = new LaneMarker(store.lanes, (err) =>
    log.warn({ err }, "marking lanes failed; the overdue sweep will"),
  );
  // Work accepted for later (sendAt, quiet hours) wakes this instance's workers at its time, not
  // at their next poll; a time further than a day is left to the polls and the lanes' settling.
  const dueLater = new DueAlarm(() => background.wake());
  const schedule = async (accountId: string, deliveryAt: Date, acceptedAt: Date) => {
    lanes.mark(accountId, "delivery", deliveryAt);
    lanes.mark(accountId, "notify", acceptedAt);
    await lanes.flush();
    background.wake();
    const ahead = deliveryAt.getTime() - store.clock.nowMs();
    if (ahead > 0 && ahead < 86_400_000) dueLater.add(Date.now() + ahead);
  };
  // Bodies over 1 MiB read at once, per client address and in all, on both ports.
  const largeBodies = new LargeBodySlots();
  const limits = new RateLimits({
    requestsPerSecond: config.rateLimitRps,
    authFailuresPerMinute: config.authFailuresPerMin,
  });

  // Two-way messaging: the opt-out list and its rules, and the intake of inbound messages.
  const optOuts = openOptOuts(store.db);
  const optOutReads = new OptOutReads(optOuts, store.accounts);
  const instanceId = randomUUID();
  // A handset's STOP told to every delivering instance: it waits only for claims not yet told.
  const stops = new StopFeed({
    db: store.db,
    instanceId,
    logger: log.child({ component: "opt-outs" }),
  });
  const optOutRules = new OptOutRules({
    store,
    optOuts,
    // Replies are few: small blocks of the message sequence.
    messageIds: new IdAllocator(store.counters, "message", 20),
    pricePerPartMicros: config.pricePerPartMicros,
    onQueued: schedule,
    stops,
  });
  const inboundLog = log.child({ component: "inbound" });
  const inbound = new InboundIntake({
    db: store.db,
    now: () => store.clock.now(),
    ids: new IdAllocator(store.counters, "inbound"),
    logger: inboundLog,
    // A STOP is on the list before its deliver_sm_resp: the intake answers after the hook.
    onInbound: (message) => optOutRules.applyInbound(message),
    // Stored with its webhook pending when the account has an inbound URL (the notifier sends it).
    webhooks: new InboundWebhookQueue(store, inboundLog, () => background.wakeInbound()),
    reassemblyMs: config.moReassemblyS * 1000,
    defaultAlphabet: config.moDefaultAlphabet,
  });
  // Suspended and closed accounts' messages: held by the worker's claims, withdrawn on close.
  const heldMessages = new HeldMessages(store, {
    pricePerPartMicros: config.pricePerPartMicros,
    now: () => store.clock.now(),
  });
  const onStatusChange = async (accountId: string, change: string) => {
    heldMessages.forget();
    if (change === "close") {
      await heldMessages.withdraw(accountId, "closed", store.clock.now());
    } else if (change === "resume") {
      // Held messages go on at once, not at the held lane's next look.
      await schedule(accountId, store.clock.now(), store.clock.now());
    }
  };
  // The delivery worker and its carriers, the notifier and the settler; started by
  // startBackground() once the ports listen. (schedule and the inbound queue above call it only
  // once requests and MOs come, after build.)
  const background = new BackgroundControl({
    config,
    store,
    instanceId,
    logger: log,
    metrics,
    screen: (messages) => optOutRules.screen(messages),
    hold: heldMessages,
    stops,
    inbound,
  });

  // The toll-fraud guard (docs/design.md "Money"), counted in memory on this instance.
  const riskEvents = store.db.collection<RiskEventDoc>("risk_events");
  await RiskEvents.ensureIndexes(riskEvents);
  const risk = {
    guard: new TollFraudGuard(config.carriers.risk ?? DEFAULT_RISK),
    events: new RiskEvents(riskEvents, (err) =>
      log.warn({ err }, "keeping a toll-fraud guard event failed"),
    ),
  };

  const serviceRoutes = routes({
    risk,
    store,
    directory,
    messageIds: new IdAllocator(store.counters, "message"),
    confirmations,
    writer: new MessageWriter(store, store.messages, confirmations, () => store.clock.now()),
    timeouts: { requestMs: config.requestTimeoutMs, batchStoreMs: config.batchStoreTimeoutMs },
    policy: {
      sharedSender: config.sharedSender,
      maxParts: config.maxParts,
      routing: new Routing(config.carriers, config.numberValidation),
    },
    onAccepted: schedule,
    adminToken: config.adminToken,
    idempotency: new IdempotencyKeys(idempotencyKeys, (err) =>
      log.warn({ err }, "recording an idempotent answer failed; its key frees up when stale"),
    ),
    sharedSender: config.sharedSender,
    limits,
    optOuts,
    optOutRules,
    // Single sends' reads grouped (opt-outs/list-reads.ts); a batch's read goes on its own.
    optedOut: (accountId, numbers, options) => optOutReads.among(accountId, numbers, options),
    sendChecks: optOutReads,
    carrier: config.carrier,
    inbound,
    ...(metrics && { intake: metrics.intake }),
    log: log.child({ component: "services" }),
    keyUse: keyUse.note,
    onStatusChange,
  });

  // The doors. Connect on both ports: read limits per method, credentials checked before a body
  // is read, then the body checked as it arrives (rpc/call-requests.ts).
  const rpcRequest = rpcRequests({
    slots: largeBodies,
    batchReadMaxBytes: config.bodyLimitBytes,
    routes: serviceRoutes,
  });
  const rpcOptions = () =>
    rpcHandlerOptions({
      routes: serviceRoutes,
      batchReadMaxBytes: config.bodyLimitBytes,
      authenticate: callerCheck({ directory, adminToken: config.adminToken, limits }),
      interceptors: [
        ...(tracingActive() ? [traceCalls] : []),
        ...(metrics ? [metrics.requests.interceptor] : []),
      ],
    });
  const grpc = grpcServer(
    config,
    nodeAdapter(
      rpcOptions(),
      (request, response) => rpcRequest(request, response, request.socket.remoteAddress),
      log,
    ),
  );
  await app.register(swagger, OPENAPI);
  await app.register(swaggerUi, { routePrefix: "/docs" });
  await app.register(async (rpc) => {
    // What reaches a Connect path on PORT without being a Connect call is answered like REST.
    registerErrorHandler(rpc);
    refuseForeignRequests(rpc);
    fastifyAdapter(
      rpc,
      rpcOptions(),
      (request, response) => rpcRequest(request, response, request.socket.remoteAddress),
      {
        call: (request, response) =>
          rpcRequest.jsonCall(request, response, request.socket.remoteAddress),
      },
    );
  });
  await app.register(async (rest) => {
    registerBodyParsers(rest, { largeBodies });
    registerErrorHandler(rest);
    const clients = inProcessClients(serviceRoutes);
    messageRoutes(rest, clients, config.bodyLimitBytes);
    senderNameRoutes(rest, clients);
    inboundRoutes(rest, clients);
    optOutRoutes(rest, clients);
    quietHoursRoutes(rest, clients);
    moneyRoutes(rest, clients);
    apiKeyRoutes(rest, clients);
  });
  // The account dashboard: HTML pages over the same services, in a scope of its own (its
  // session, CSRF, body parsers and error pages touch no other route). Not in the OpenAPI document.
  await app.register(
    (dashboard) =>
      dashboardRoutes(dashboard, {
        clients: inProcessClients(serviceRoutes),
        directory,
        store,
        sessions: DashboardSessions.open(store.db, () => store.clock.now()),
        limits,
        config,
      }),
    { prefix: "/dashboard" },
  );
  // The operator's console: its own server (main.ts listens on OPERATOR_PORT), every action an
  // AdminService call on the in-process transport.
  const operatorConsole =
    config.operatorPort === 0
      ? undefined
      : await consoleServer(
          {
            admin: createClient(AdminService, inProcessTransport(serviceRoutes)),
            store,
            sessions: new DashboardSessions(store.db.collection("operator_sessions"), () =>
              store.clock.now(),
            ),
            limits,
            config,
          },
          logger,
        );
  if (operatorConsole) app.addHook("onClose", async () => operatorConsole.close());
  // Where this instance's carriers stand, for the console's carriers page of any instance.
  const carrierStates = carrierStatesCollection(store.db);
  const reportCarriers = setInterval(() => {
    const carrier = background.carrier();
    if (!carrier) return;
    writeCarrierState(carrierStates, {
      _id: instanceId,
      at: store.clock.now(),
      carriers: [carrier as { name: string }],
    }).catch((err: unknown) => log.warn({ err }, "writing the carriers' state failed"));
  }, 5_000);
  reportCarriers.unref();
  app.addHook("onClose", async () => clearInterval(reportCarriers));
  registerErrorHandler(app);
  registerNotFoundHandler(app);
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  const health = healthRoutes(app, { db, carrier: () => background.carrier(), draining });

  app.addHook("preClose", async () => background.refuseStart());
  closeInOrder(app, config, [
    { name: "gRPC port", run: grpc.close },
    { name: "background work", run: () => background.stop() },
    { name: "charge confirmations", run: () => confirmations.flush() },
  ]);
  app.addHook("onClose", async () => store.clock.stop());

  return {
    app,
    grpc: grpc.server,
    store,
    metrics,
    console: operatorConsole,
    health,
    startBackground: () => background.start(),
  };
}

/** Majority-journaled writes and primary reads, whatever the connection string says; timed when metrics are on. */
async function openServiceStore(db: Db, metrics: Metrics | undefined): Promise<Store> {
  const durableDb = durable(db);
  const store = openStore(metrics ? metrics.database.timed(durableDb) : durableDb);
  await ensureIndexes(store);
  await ensureOptOutIndexes(openOptOuts(store.db));
  await ensureApiKeyIndexes(apiKeysCollection(store.db));
  await ensureAuditIndexes(auditLogCollection(store.db));
  await ensureRejectionIndexes(rejectionsCollection(store.db));
  return store;
}

/** A claim still running after the settler's cutoff is a crashed run's (no request outlives it). */
async function openIdempotencyKeys(store: Store, config: Config): Promise<KeyStore> {
  const keys = KeyStore.open(store.db, () => store.clock.now(), config.settleAfterMs);
  await keys.ensureIndexes();
  return keys;
}

/**
 * Both ports stop taking work at once (the HTTP/1.1 port drains meanwhile), then the steps run in
 * order, within the shutdown grace: they finish before the process's forced exit
 * (lifecycle/shutdown.ts) comes.
 */
function closeInOrder(
  app: FastifyInstance,
  config: Config,
  steps: { name: string; run: () => Promise<void> }[],
): void {
  let closeDeadline = Number.POSITIVE_INFINITY;
  const first = steps[0];
  app.addHook("preClose", async () => {
    closeDeadline = Date.now() + config.shutdownGraceMs * 0.9;
    void first?.run();
  });
  app.addHook("onClose", async () => {
    await runCloseSteps(steps, closeDeadline, app.log);
  });
}

const OPENAPI = {
  hideUntagged: true,
  openapi: {
    openapi: "3.1.0",
    info: {
      title: "SMS API",
      version: "1.0.0",
      description:
        "Send SMS one at a time or in batches of up to 10000, read batch progress, manage sender names. Status webhooks: GET <status URL>?id=<id>&status=<STATUS>[&batch_id=<id>], signed with Standard Webhooks headers.",
    },
  },
};
