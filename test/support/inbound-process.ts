/**
 * The SMPP adapter and the MO intake alone in a process, for the crash test of inbound messages:
 * `node --import tsx test/support/inbound-process.ts`, configured by TEST_MONGODB_URI, INBOUND_DB
 * and SMPP_URL. Its intake's hook kills the process with SIGKILL: every MO it stores (its inbound
 * webhook queued with it, when the account has an inbound URL) dies with its deliver_sm_resp
 * unsent, as a crash between the two would leave it.
 */
import { MongoClient } from "mongodb";
import { pino } from "pino";
import { SmppCarrier } from "../../src/delivery/smpp-carrier/adapter.ts";
import { InboundIntake } from "../../src/inbound/intake.ts";
import { InboundWebhookQueue } from "../../src/notifier/inbound-queue.ts";
import { parseSmppUrl } from "../../src/smpp/endpoint.ts";
import { openStore } from "../../src/store/database.ts";
import { IdAllocator } from "../../src/store/sequences.ts";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const client = await new MongoClient(env("TEST_MONGODB_URI")).connect();
const store = openStore(client.db(env("INBOUND_DB")));
const logger = pino({ level: "silent" });
const intake = new InboundIntake({
  db: store.db,
  now: () => new Date(),
  ids: new IdAllocator(store.counters, "inbound"),
  logger,
  onInbound: async () => {
    process.kill(process.pid, "SIGKILL");
    await new Promise(() => {});
  },
  webhooks: new InboundWebhookQueue(store, logger),
  reassemblyMs: 1_800_000,
  defaultAlphabet: "gsm7",
});
const carrier = new SmppCarrier({
  endpoint: parseSmppUrl(env("SMPP_URL")),
  inbound: (parts) => intake.take(parts),
  logger,
});
await carrier.start(async () => ({}));
process.stdout.write("started\n");
