/**
 * A delivery worker alone in a process, for tests that kill it with SIGKILL mid-delivery:
 * `node --import tsx test/support/delivery-process.ts`, configured by environment variables
 * (TEST_MONGODB_URI, DELIVERY_DB, DELIVERY_WINDOW, DELIVERY_LEASE_MS, DELIVERY_SEND_DELAY_MS).
 * Its simulator logs every submitted part (`simulator_submissions`) before answering.
 */
import { MongoClient } from "mongodb";
import { pino } from "pino";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import { openStore } from "../../src/store/database.ts";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const client = await new MongoClient(env("TEST_MONGODB_URI")).connect();
const store = openStore(client.db(env("DELIVERY_DB")));
const carrier = new SimulatorCarrier({
  db: store.db,
  sendDelayMs: Number(env("DELIVERY_SEND_DELAY_MS")),
  receiptDelayMs: 0,
  window: Number(env("DELIVERY_WINDOW")),
  logSubmissions: true,
  instanceId: "sim-doomed",
});
const worker = new DeliveryWorker({
  store,
  carrier,
  logger: pino({ level: "silent" }),
  instanceId: "worker-doomed",
  pollIntervalMs: 50,
  leaseMs: Number(env("DELIVERY_LEASE_MS")),
});
await worker.start();
process.stdout.write("started\n");
