/**
 * A delivery worker on the SMPP adapter alone in a process, for tests that kill it with SIGKILL
 * mid-delivery: `node --import tsx test/support/smpp-delivery-process.ts`, configured by
 * environment variables (TEST_MONGODB_URI, DELIVERY_DB, SMPP_URL, SMPP_BINDS, SMPP_WINDOW,
 * DELIVERY_LEASE_MS). The test SMSC's PDU log tells what it submitted.
 */
import { MongoClient } from "mongodb";
import { pino } from "pino";
import { SmppCarrier } from "../../src/delivery/smpp/adapter.ts";
import { parseSmppUrl } from "../../src/delivery/smpp/endpoint.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import { openStore } from "../../src/store/database.ts";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const client = await new MongoClient(env("TEST_MONGODB_URI")).connect();
const store = openStore(client.db(env("DELIVERY_DB")));
const logger = pino({ level: "silent" });
const carrier = new SmppCarrier({
  endpoint: parseSmppUrl(env("SMPP_URL")),
  binds: Number(env("SMPP_BINDS")),
  window: Number(env("SMPP_WINDOW")),
  logger,
});
const worker = new DeliveryWorker({
  store,
  carrier,
  logger,
  instanceId: "worker-doomed",
  pollIntervalMs: 50,
  leaseMs: Number(env("DELIVERY_LEASE_MS")),
});
await worker.start();
process.stdout.write("started\n");
