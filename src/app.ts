import { randomUUID } from "node:crypto";
import http2 from "node:http2";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { Db } from "mongodb";
import { type BackgroundWork, startBackgroundWork } from "./background.ts";
import type { Config } from "./config/config.ts";
import { http1ServerOptions, limitHttp1 } from "./connections/http1-limits.ts";
import { http2ServerOptions, limitHttp2 } from "./connections/http2-limits.ts";
import { dashboardRoutes } from "./dashboard/dashboard.ts";
import { Routing } from "./delivery/routing/routing.ts";
import { IdempotencyKeys } from "./idempotency/idempotent-calls.ts";
import { KeyStore } from "./idempotency/key-store.ts";
import { runCloseSteps } from "./lifecycle/close-steps.ts";
import { refuseWhileClosing } from "./lifecycle/draining.ts";
import { type HealthReport, healthRoutes } from "./lifecycle/health.ts";
import { redactingLogger } from "./logging.ts";
import { createMetrics, type Metrics } from "./metrics/metrics.ts";
import { ensureOptOutIndexes, openOptOuts } from "./opt-outs/list.ts";
import { LargeBodySlots } from "./rate-limits/large-bodies.ts";
import { RateLimits } from "./rate-limits/rate-limits.ts";
import { trackRequests } from "./request-context.ts";
import { registerBodyParsers } from "./rest/body-parsers.ts";
import { clientErrorHandler } from "./rest/client-errors.ts";
import {
  frameworkErrors,
  registerErrorHandler,
  registerNotFoundHandler,
} from "./rest/error-handler.ts";
import { inboundRoutes } from "./rest/inbound.ts";
import { messageRoutes } from "./rest/messages.ts";
import { optOutRoutes } from "./rest/opt-outs.ts";
import { senderNameRoutes } from "./rest/sender-names.ts";
import { inProcessClients } from "./rest/service-clients.ts";
import { rpcRequests } from "./rpc/call-requests.ts";
import { callerCheck } from "./rpc/caller-check.ts";
import { refuseForeignRequests } from "./rpc/foreign-requests.ts";
import { rpcHandlerOptions } from "./rpc/handler-options.ts";
import { fastifyAdapter, nodeAdapter } from "./rpc/node-adapter.ts";
import { LaneMarker } from "./scheduling/lanes.ts";
import { AccountDirectory } from "./services/account-directory.ts";
import { routes } from "./services/routes.ts";
import { ChargeConfirmations, settleAbandonedCharges } from "./store/charges.ts";
import { DashboardSessions } from "./store/dashboard-sessions.ts";
import { durable, openStore, type Store } from "./store/database.ts";
import { ensureIndexes } from "./store/indexes.ts";
import { MessageWriter } from "./store/message-writer.ts";
import { numbersCollection } from "./store/numbers.ts";
import { IdAllocator } from "./store/sequences.ts";
import { TracedLogController, traceCalls, traceRequests } from "./tracing/request-spans.ts";
import { tracingActive } from "./tracing/tracing.ts";
import { twoWay } from "./two-way.ts";

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
  // Majority-journaled writes and primary reads, whatever the connection string says; timed
  // operations when metrics are on.
  const durableDb = durable(db);
  const store = openStore(metrics ? metrics.database.timed(durableDb) : durableDb);
  await ensureIndexes(store);
  await ensureOptOutIndexes(openOptOuts(store.db));
  // A claim still running after the settler's cutoff is a crashed run's (no request outlives it).
  const idempotencyKeys = KeyStore.open(store.db, () => store.clock.now(), config.settleAfterMs);
  await idempotencyKeys.ensureIndexes();
  await store.clock.start();
  const instanceId = randomUUID();
  // The queues' depth where workers run; an API-only instance would only repeat their values, at
  // the database's expense.
  if (metrics && config.runWorkers) metrics.reportQueues(store);

  const app = Fastify({
    logger: redactingLogger(logger, config.logLevel),
    bodyLimit: 1024 * 1024,
    // Header, body-idle, whole-request and keep-alive bounds (connections/http1-limits.ts).
    ...http1ServerOptions(
      config.connections,
      Math.max(config.requestTimeoutMs, config.batchStoreTimeoutMs),
    ),
    ajv: { customOptions: { coerceTypes: false, allErrors: true, removeAdditional: false } },
    // lifecycle/draining.ts answers while closing, in the spec's shape.
    return503OnClosing: false,
    frameworkErrors,
    // Requests Node's HTTP parser refuses get the spec's error shape too.
    clientErrorHandler,
    // With tracing, tracing/request-spans.ts writes "incoming request", with the trace id.
    ...(tracingActive() && { logController: new TracedLogController() }),
  });

  limitHttp1(app.server, config.connections);
  // First of the onRequest hooks: nothing else runs for a request refused while closing.
  const draining = refuseWhileClosing(app);
  // Then the request's context, which puts its reqId on every log line written while serving it.
  trackRequests(app);
  if (tracingActive()) traceRequests(app);
  metrics?.requests.observe(app);

  const directory = new AccountDirectory(
    store.accounts,
    store.senderNames,
    numbersCollection(store.db),
  );
  const confirmations = new ChargeConfirmations(store.accounts, (err) =>
    app.log.warn({ err }, "confirming charges failed; the settler will"),
  );
  // Accepted work is scheduled in its account's lanes before the answer (see scheduling/lanes.ts).
  const lanes = new LaneMarker(store.lanes, (err) =>
    app.log.warn({ err }, "marking lanes failed; the overdue sweep will"),
  );
  // Set by startBackground(), once the ports listen.
  let background: BackgroundWork | undefined;
  let settleTimer: NodeJS.Timeout | undefined;
  let closing = false;
  // Bodies over 1 MiB read at once, per client address and in all, on both ports.
  const largeBodies = new LargeBodySlots();
  const limits = new RateLimits({
    requestsPerSecond: config.rateLimitRps,
    authFailuresPerMinute: config.authFailuresPerMin,
  });
  const schedule = async (accountId: string, deliveryAt: Date, acceptedAt: Date) => {
    lanes.mark(accountId, "delivery", deliveryAt);
    lanes.mark(accountId, "notify", acceptedAt);
    await lanes.flush();
    background?.wake();
  };
  // Opt-outs, replies to opt-out words, numbers and inbound messages (design "Two-way messaging").
  const twoWayParts = twoWay(store, config, schedule, app.log.child({ component: "inbound" }));
  const serviceRoutes = routes({
    ...twoWayParts.serviceDeps,
    store,
    directory,
    messageIds: new IdAllocator(store.counters, "message"),
    confirmations,
    writer: new MessageWriter(store.accounts, store.messages, confirmations, () =>
      store.clock.now(),
    ),
    timeouts: { requestMs: config.requestTimeoutMs, batchStoreMs: config.batchStoreTimeoutMs },
    policy: {
      sharedSender: config.sharedSender,
      maxParts: config.maxParts,
      routing: new Routing(config.carriers, config.numberValidation),
    },
    onAccepted: schedule,
    adminToken: config.adminToken,
    idempotency: new IdempotencyKeys(idempotencyKeys, (err) =>
      app.log.warn({ err }, "recording an idempotent answer failed; its key frees up when stale"),
    ),
    sharedSender: config.sharedSender,
    limits,
    ...(metrics && { intake: metrics.intake }),
    log: app.log.child({ component: "services" }),
  });

  const startBackground = async () => {
    if (closing || background) return;
    const started = await startBackgroundWork({
      config,
      store,
      instanceId,
      logger: app.log,
      metrics,
      screen: twoWayParts.screen,
      inbound: twoWayParts.inbound,
    });
    // A close that began meanwhile has passed the step that stops it.
    if (closing) return started.stop();
    background = started;
    // Charges a crash left pending are settled: confirmed or refunded. Checked every 30 s, or
    // a quarter of the cutoff when that is shorter (tests shorten SMS_SETTLE_AFTER_MS).
    settleTimer = setInterval(
      () => {
        settleAbandonedCharges(store, config.settleAfterMs, store.clock.now()).catch((err) =>
          app.log.warn({ err }, "settling abandoned charges failed"),
        );
      },
      Math.min(30_000, config.settleAfterMs / 4),
    );
  };

  // Both Connect adapters: read limits per method, credentials checked before a body is read,
  // then the body checked as it arrives (rpc/call-requests.ts).
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
  const grpc = http2.createServer(
    http2ServerOptions(config.connections),
    nodeAdapter(
      rpcOptions(),
      (request, response) => rpcRequest(request, response, request.socket.remoteAddress),
      app.log,
    ),
  );
  // Idle connections closed, request bodies bounded in time (connections/http2-limits.ts).
  limitHttp2(grpc, config.connections);
  // Open client sessions (idle HTTP/2 connections) would keep grpc.close() waiting forever.
  const sessions = new Set<http2.ServerHttp2Session>();
  grpc.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });

  let grpcClosed: Promise<void> | undefined;
  const closeGrpc = () =>
    (grpcClosed ??= new Promise<void>((resolve) => {
      grpc.close(() => resolve());
      // GOAWAY: in-flight streams finish, then each session closes.
      for (const session of sessions) session.close();
    }));
  // Both ports stop taking work at once; the HTTP/1.1 port drains meanwhile (onClose runs after).
  let closeDeadline = Number.POSITIVE_INFINITY;
  app.addHook("preClose", async () => {
    closing = true;
    // The steps below finish before the process's forced exit (lifecycle/shutdown.ts) comes.
    closeDeadline = Date.now() + config.shutdownGraceMs * 0.9;
    void closeGrpc();
  });
  app.addHook("onClose", async () => {
    clearInterval(settleTimer);
    await runCloseSteps(
      [
        { name: "gRPC port", run: closeGrpc },
        { name: "background work", run: async () => background?.stop() },
        { name: "charge confirmations", run: () => confirmations.flush() },
      ],
      closeDeadline,
      app.log,
    );
    store.clock.stop();
  });

  await app.register(swagger, {
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
  });
  await app.register(swaggerUi, { routePrefix: "/docs" });
  await app.register(async (rpc) => {
    // What reaches a Connect path on PORT without being a Connect call is answered like REST.
    registerErrorHandler(rpc);
    refuseForeignRequests(rpc);
    fastifyAdapter(rpc, rpcOptions(), (request, response) =>
      rpcRequest(request, response, request.socket.remoteAddress),
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
  registerErrorHandler(app);
  registerNotFoundHandler(app);

  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  const health = healthRoutes(app, { db, carrier: () => background?.carrier(), draining });

  return { app, grpc, store, metrics, health, startBackground };
}
