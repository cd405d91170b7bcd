import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { build } from "./app.ts";
import { ConfigError, loadConfig } from "./config/config.ts";
import { Shutdown } from "./lifecycle/shutdown.ts";
import { serveMetrics } from "./metrics/server.ts";
import { connect } from "./store/database.ts";
import { startDatabase } from "./store/embedded-mongo.ts";
import { startTracing } from "./tracing/tracing.ts";

// Wires configuration to build() and listens. Everything else lives in build().

let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(1);
  }
  throw error;
}

// Listening for signals from the start: one during start-up closes what has started so far.
const shutdown = new Shutdown(config.shutdownGraceMs);
shutdown.listen();

// Before anything else, so every span has a provider; flushed last (closed after the rest).
let stopTracing: ReturnType<typeof startTracing>;
try {
  stopTracing = startTracing(process.env);
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
if (stopTracing) shutdown.add("tracing", stopTracing);

const database = await startDatabase({ dataDir: ".data", logger: (msg) => console.error(msg) });
shutdown.add("database", () => database.stop());
const client = await connect(database.uri);
shutdown.add("database client", () => client.close());
const { app, grpc, metrics, health } = await build({
  config,
  db: client.db(config.mongodbDatabase),
});
shutdown.useLogger(app.log);
if (metrics) {
  // Added before the service, so closed after it: scrapes still see the instance draining.
  const server = await serveMetrics(metrics.registry, config.metricsPort, config.host, health);
  shutdown.add("metrics", () => server.close());
  app.log.info({ url: `${server.url}/metrics` }, "Prometheus metrics listening");
}
// Stops accepting on both ports, lets in-flight requests finish, then stops background work.
shutdown.add("service", () => app.close());
if (!config.mongodbUri) {
  app.log.info(
    { database: database.kind, description: database.description },
    "using the embedded database",
  );
}

await app.listen({ port: config.port, host: config.host });
grpc.listen(config.grpcPort, config.host);
await once(grpc, "listening");
app.log.info(
  { port: (grpc.address() as AddressInfo).port },
  "gRPC and Connect over HTTP/2 cleartext listening",
);
