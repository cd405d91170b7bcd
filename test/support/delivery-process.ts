/**
 * A delivery worker alone in a process, for tests that kill it with SIGKILL mid-delivery:
 * `node --import tsx test/support/delivery-process.ts`, configured by environment variables:
 * TEST_MONGODB_URI, DELIVERY_DB, DELIVERY_LEASE_MS, DELIVERY_CLAIM_AHEAD (parts claimed ahead of
 * the carrier's window), and either DELIVERY_CARRIER=simulator with
 * DELIVERY_WINDOW and DELIVERY_SEND_DELAY_MS (its simulator logs every submitted part in
 * `simulator_submissions` before answering), or DELIVERY_CARRIER=smpp with SMPP_URL, SMPP_BINDS
 * and SMPP_WINDOW (the test SMSC's PDU log tells what it received).
 */
import { MongoClient } from "mongodb";
import { pino } from "pino";
import type { Carrier } from "../../src/delivery/carrier.ts";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import { SmppCarrier } from "../../src/delivery/smpp-carrier/adapter.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import { parseSmppUrl } from "../../src/smpp/endpoint.ts";
import { openStore } from "../../src/store/database.ts";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const client = await new MongoClient(env("TEST_MONGODB_URI")).connect();
const store = openStore(client.db(env("DELIVERY_DB")));
const logger = pino({ level: "silent" });
const carrier: Carrier =
  env("DELIVERY_CARRIER") === "smpp"
    ? new SmppCarrier({
        endpoint: parseSmppUrl(env("SMPP_URL")),
        binds: Number(env("SMPP_BINDS")),
        window: Number(env("SMPP_WINDOW")),
        logger,
      })
    : new SimulatorCarrier({
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
  logger,
  instanceId: "worker-doomed",
  pollIntervalMs: 50,
  leaseMs: Number(env("DELIVERY_LEASE_MS")),
  claimAheadParts: Number(env("DELIVERY_CLAIM_AHEAD")),
});
await worker.start();
process.stdout.write("started\n");
