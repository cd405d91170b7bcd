import { once } from "node:events";
import { build } from "./app.ts";
import { ConfigError, loadConfig } from "./config/config.ts";
import { connect } from "./store/database.ts";
import { startDatabase } from "./store/embedded-mongo.ts";

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

const database = await startDatabase({ dataDir: ".data", logger: (msg) => console.error(msg) });
const client = await connect(database.uri);
const { app, grpc } = await build({ config, db: client.db(config.mongodbDatabase) });
if (!config.mongodbUri) {
  app.log.info(
    { database: database.kind, description: database.description },
    "using the embedded database",
  );
}

await app.listen({ port: config.port, host: config.host });
grpc.listen(config.grpcPort, config.host);
await once(grpc, "listening");
app.log.info({ port: config.grpcPort }, "gRPC and Connect over HTTP/2 cleartext listening");

let closing = false;
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, "shutting down: finishing in-flight requests");
    const force = setTimeout(() => process.exit(1), 20_000).unref();
    app
      .close()
      .then(() => client.close())
      .then(() => database.stop())
      .then(() => {
        clearTimeout(force);
        process.exit(0);
      })
      .catch((err) => {
        app.log.error({ err }, "shutdown failed");
        process.exit(1);
      });
  });
}
