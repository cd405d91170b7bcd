/**
 * The service on a test database it reaches through a fault proxy (test/support/fault-proxy.ts),
 * with the service's own client options, and a direct handle on the same database that sees the
 * truth whatever the proxy does. For the fault tests of test/faults/.
 */

import type { Writable } from "node:stream";
import { type Db, MongoClient } from "mongodb";
import { CLIENT_OPTIONS, openStore, type Store } from "../../src/store/database.ts";
import { testDatabase } from "./database.ts";
import { FaultProxy } from "./fault-proxy.ts";
import { type RunningService, startService } from "./service.ts";

export interface FaultyService {
  service: RunningService;
  proxy: FaultProxy;
  /** The same database, straight to the server. */
  direct: Store;
  close(): Promise<void>;
}

/** Timeouts short enough for tests, in the ratio the configuration enforces. */
export const SHORT_DEADLINES = {
  SMS_REQUEST_TIMEOUT_MS: "1000",
  SMS_BATCH_STORE_TIMEOUT_MS: "1500",
  SMS_SETTLE_AFTER_MS: "3000",
};

export async function startFaultyService(
  env: Record<string, string> = {},
  options: { record?: boolean; logStream?: Writable } = {},
): Promise<FaultyService> {
  const truth = await testDatabase({ label: "faults" });
  const proxy = await FaultProxy.start(truth.uri, options);
  const client = new MongoClient(proxy.uri, CLIENT_OPTIONS);
  await client.connect();
  const db: Db = client.db(truth.name);
  const service = await startService(
    env,
    { ...truth, client, db, close: async () => undefined },
    { ...(options.logStream && { logStream: options.logStream }) },
  );
  return {
    service,
    proxy,
    direct: openStore(truth.db),
    async close() {
      proxy.restore();
      await service.close();
      await client.close();
      await proxy.close();
      await truth.close();
    },
  };
}

/** POSTs JSON with Basic credentials and a client-side limit; returns status, headers, body, time. */
export async function post(
  url: string,
  body: unknown,
  account: { apiKey: string; apiSecret: string },
): Promise<{ status: number; retryAfter: string | null; body: any; ms: number }> {
  const started = Date.now();
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...(body as object), ...account }),
    signal: AbortSignal.timeout(30_000),
  });
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: await response.json(),
    ms: Date.now() - started,
  };
}
