import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { build } from "./app.ts";
import { type Config, ConfigError, loadConfig } from "./config/config.ts";
import { startDatabase } from "./dev-database/embedded-mongo.ts";
import { Shutdown } from "./lifecycle/shutdown.ts";
import { listenOn, startStep, startupFailure } from "./lifecycle/start-up.ts";
import { serveMetrics } from "./metrics/server.ts";
import { connect } from "./store/database.ts";
import { startTracing } from "./tracing/tracing.ts";

// Wires configuration to build() and listens. Everything else lives in build(). Every port
// listens before any background work starts (the carrier's binds, the delivery worker, the
// notifier), so a start that fails, said in one line, has sent nothing anywhere.

let config: Config;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`invalid configuration: ${error.problems.join("; ")}`);
    process.exit(1);
  }
  throw error;
}

// Listening for signals from the start: one during start-up closes what has started so far.
const shutdown = new Shutdown(config.shutdownGraceMs);
shutdown.listen();

try {
  await start(config);
} catch (error) {
  await shutdown.fail(startupFailure(error));
}

async function start(config: Config): Promise<void> {
  // Before anything else, so every span has a provider; flushed last (closed after the rest).
  const stopTracing = await startStep("tracing (the OTEL_* variables)", () =>
    startTracing(process.env),
  );
  if (stopTracing) shutdown.add("tracing", stopTracing);

  const source = config.mongodbUri ? "MONGODB_URI" : "the embedded database";
  const database = await startStep(source, () =>
    startDatabase({ dataDir: config.dataDir, logger: (msg) => console.error(msg) }),
  );
  // Stopped last of all: in its own process group (dev-database/java-tool.ts), a terminal's Ctrl-C
  // reaches only the service, which drains on the database before it stops it.
  shutdown.add("database", () => database.stop());
  const client = await startStep(source, () => connect(database.uri));
  shutdown.add("database client", () => client.close());
  const {
    app,
    grpc,
    metrics,
    health,
    startBackground,
    console: operatorConsole,
  } = await startStep(`preparing database ${config.mongodbDatabase} (MONGODB_DATABASE)`, () =>
    build({ config, db: client.db(config.mongodbDatabase) }),
  );
  shutdown.useLogger(app.log);
  if (!config.mongodbUri) {
    app.log.info(
      { database: database.kind, description: database.description },
      "using the embedded database",
    );
  }

  if (metrics) {
    // Added before the service, so closed after it: scrapes still see the instance draining.
    const server = await listenOn("METRICS_PORT", config.metricsPort, config.host, () =>
      serveMetrics(metrics.registry, config.metricsPort, config.host, health),
    );
    shutdown.add("metrics", () => server.close());
    app.log.info({ url: `${server.url}/metrics` }, "Prometheus metrics listening");
  }
  // Stops accepting on both ports, lets in-flight requests finish, then stops background work.
  shutdown.add("service", () => app.close());
  await listenOn("PORT", config.port, config.host, () =>
    app.listen({ port: config.port, host: config.host }),
  );
  await listenOn("GRPC_PORT", config.grpcPort, config.host, () => {
    grpc.listen(config.grpcPort, config.host);
    return once(grpc, "listening");
  });
  app.log.info(
    { port: (grpc.address() as AddressInfo).port },
    "gRPC and Connect over HTTP/2 cleartext listening",
  );

  if (operatorConsole) {
    // Closed with the service (app.ts); loopback unless OPERATOR_HOST says otherwise.
    await listenOn("OPERATOR_PORT", config.operatorPort, config.operatorHost, () =>
      operatorConsole.listen({ port: config.operatorPort, host: config.operatorHost }),
    );
    app.log.info(
      { url: `http://${config.operatorHost}:${config.operatorPort}/` },
      "operator console listening",
    );
  }

  await startStep("the delivery worker and notifier (SMS_CARRIER)", startBackground);
}
