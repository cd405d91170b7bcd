// What the trace a message keeps (25 bytes, tracing.ts's `currentTraceCarrier`) costs the store:
// the database server's CPU and this process's (the driver's BSON) per message inserted, with
// and without it. The documents are the service's own (`acceptedMessage`), inserted as its group
// commit does (unordered `insertMany` of 12, 16 in flight); the sides alternate, each after a
// collected emulator heap, and each side's value is its median over the rounds.
//
//   npx tsx bench/stored-trace-cost.ts [--rounds 12] [--messages 36000]

import { Binary, MongoClient } from "mongodb";
import { startDatabase } from "../src/dev-database/embedded-mongo.ts";
import type { MessageDoc } from "../src/store/documents.ts";
import { acceptedMessage } from "../src/store/messages.ts";
import { unsampledRoot } from "../src/tracing/root-sampling.ts";
import { optionValue } from "./common.ts";
import { collectEmulatorHeap, cpuSeconds, median } from "./processes.ts";

const rounds = Number(optionValue("rounds", "12"));
const messages = Number(optionValue("messages", "36000"));
const GROUP = 12;
const IN_FLIGHT = 16;

const database = await startDatabase({ logger: (m) => process.stderr.write(`${m}\n`) });
const emulatorPid = /pid (\d+)/.exec(database.description)?.[1];
/** The emulator's CPU seconds so far; 0 on another database, whose process this cannot read. */
const databaseCpuSeconds = () => (emulatorPid ? cpuSeconds(Number(emulatorPid)) : 0);
const client = await new MongoClient(database.uri).connect();
const collection = client.db("bench_stored_trace").collection<MessageDoc>("messages");

type Side = "without" | "with";
let nextId = 1;
function message(side: Side) {
  return acceptedMessage(
    {
      id: nextId++,
      accountId: "acct_bench",
      to: "+4915112345678",
      from: "BENCH",
      text: "Hello from the benchmark",
      parts: 1,
      ttl: 172_800,
      // As a request whose trace is not sampled stores it: its root's bytes, in place.
      ...(side === "with" && { traceContext: new Binary(unsampledRoot().stored) }),
    },
    new Date(),
  );
}

async function insertAll(side: Side): Promise<void> {
  const inFlight: Promise<unknown>[] = [];
  for (let sent = 0; sent < messages; sent += GROUP) {
    const group = Array.from({ length: GROUP }, () => message(side));
    inFlight.push(collection.insertMany(group, { ordered: false }));
    if (inFlight.length >= IN_FLIGHT) await Promise.all(inFlight.splice(0));
  }
  await Promise.all(inFlight);
}

const perMessage: Record<Side, { database: number[]; driver: number[] }> = {
  without: { database: [], driver: [] },
  with: { database: [], driver: [] },
};
// The first round warms both sides up (both processes' JIT) and is not counted.
for (let round = 0; round <= rounds; round++) {
  const order: Side[] = round % 2 === 0 ? ["without", "with"] : ["with", "without"];
  for (const side of order) {
    await collectEmulatorHeap(emulatorPid);
    const databaseBefore = databaseCpuSeconds();
    const driverBefore = process.cpuUsage();
    await insertAll(side);
    const driver = process.cpuUsage(driverBefore);
    const databaseUs = (databaseCpuSeconds() - databaseBefore) * 1e6;
    await collection.deleteMany({});
    if (round === 0) continue;
    perMessage[side].database.push(databaseUs / messages);
    perMessage[side].driver.push((driver.user + driver.system) / messages);
  }
}
for (const side of ["without", "with"] as const) {
  const { database: db, driver } = perMessage[side];
  console.log(
    `${side} the trace: database ${median(db).toFixed(1)} µs a message (${Math.min(...db).toFixed(1)}-${Math.max(...db).toFixed(1)}), driver ${median(driver).toFixed(1)} µs (${Math.min(...driver).toFixed(1)}-${Math.max(...driver).toFixed(1)})`,
  );
}
await client.db("bench_stored_trace").dropDatabase();
await client.close();
await database.stop();
