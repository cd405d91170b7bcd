import { once } from "node:events";
import type { AddressInfo } from "node:net";
import type { Writable } from "node:stream";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { build, type Service } from "../../src/app.ts";
import { type Config, loadConfig } from "../../src/config/config.ts";
import { type MetricsServer, serveMetrics } from "../../src/metrics/server.ts";
import { type TestDatabase, testDatabase } from "./database.ts";

export const ADMIN_TOKEN = "test-admin-token-0123456789";

export interface RunningService extends Service {
  config: Config;
  /** http://127.0.0.1:<port> of the HTTP/1.1 listener (REST, Connect, gRPC-Web). */
  baseUrl: string;
  /** http://127.0.0.1:<port> of the HTTP/2 cleartext listener (gRPC, Connect). */
  grpcUrl: string;
  /** http://127.0.0.1:<port> of the operator's console (OPERATOR_PORT), unless it is off. */
  consoleUrl: string | undefined;
  /** http://127.0.0.1:<port>/metrics, with `options.metrics`. */
  metricsUrl: string | undefined;
  /** http://127.0.0.1:<port>/health on the metrics port (the operator's details), with `options.metrics`. */
  operatorHealthUrl: string | undefined;
  admin: ReturnType<typeof createClient<typeof AdminService>>;
  /** Creates an account through AdminService and returns its credentials. */
  createAccount(init?: { credit?: number; statusUrl?: string }): Promise<{
    apiKey: string;
    apiSecret: string;
    webhookSecret: string;
  }>;
  close(): Promise<void>;
}

/**
 * The whole service on its own test database, listening on loopback ports chosen by the system.
 * `env` overrides configuration variables as the environment would; `logStream` receives the log
 * lines (at LOG_LEVEL, silent unless `env` sets it). `metrics`: the service keeps its metrics and
 * serves them on a port of its own (as main.ts does on METRICS_PORT); none otherwise.
 */
export async function startService(
  env: Record<string, string> = {},
  shared?: TestDatabase,
  options: { logStream?: Writable; metrics?: boolean } = {},
): Promise<RunningService> {
  const database = shared ?? (await testDatabase());
  const config = loadConfig({
    SMS_ADMIN_TOKEN: ADMIN_TOKEN,
    LOG_LEVEL: "silent",
    SMS_RUN_WORKERS: "false",
    // A port number only switches metrics on here: they are served on a free port below.
    METRICS_PORT: options.metrics ? "9464" : "0",
    ...env,
  });
  const service = await build({
    config,
    db: database.db,
    ...(options.logStream && { logger: { stream: options.logStream } }),
  });
  await service.app.listen({ port: 0, host: "127.0.0.1" });
  service.grpc.listen(0, "127.0.0.1");
  await once(service.grpc, "listening");
  const port = (service.app.server.address() as AddressInfo).port;
  const grpcPort = (service.grpc.address() as AddressInfo).port;
  const baseUrl = `http://127.0.0.1:${port}`;
  let metricsServer: MetricsServer | undefined;
  if (service.metrics) {
    metricsServer = await serveMetrics(service.metrics.registry, 0, "127.0.0.1", service.health);
  }
  let consoleUrl: string | undefined;
  if (service.console) {
    await service.console.listen({ port: 0, host: "127.0.0.1" });
    consoleUrl = `http://127.0.0.1:${(service.console.server.address() as AddressInfo).port}`;
  }
  // As main.ts does: the background work once every port listens.
  await service.startBackground();
  const admin = createClient(
    AdminService,
    createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors: [] }),
  );
  const adminHeaders = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
  return {
    ...service,
    config,
    baseUrl,
    grpcUrl: `http://127.0.0.1:${grpcPort}`,
    consoleUrl,
    metricsUrl: metricsServer && `${metricsServer.url}/metrics`,
    operatorHealthUrl: metricsServer && `${metricsServer.url}/health`,
    admin,
    async createAccount(init = {}) {
      const created = await admin.createAccount(
        {
          name: "test account",
          creditMicros: BigInt(Math.round((init.credit ?? 1000) * 1_000_000)),
          statusUrl: init.statusUrl,
        },
        adminHeaders,
      );
      return {
        apiKey: created.account?.apiKey ?? "",
        apiSecret: created.apiSecret,
        webhookSecret: created.webhookSecret,
      };
    },
    async close() {
      await service.app.close();
      await metricsServer?.close();
      // A database handed in outlives this service: a restart test builds another on it.
      if (!shared) await database.close();
    },
  };
}

export const adminHeaders = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

/** POST with a JSON body; returns status and parsed body. */
export async function postJson(url: string, body: unknown) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** POST with a form body; returns status and parsed body. */
export async function postForm(url: string, fields: Record<string, string>) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: response.status, body: (await response.json()) as any };
}

export async function getJson(url: string, method = "GET") {
  const response = await fetch(url, { method });
  return { status: response.status, body: (await response.json()) as any };
}
