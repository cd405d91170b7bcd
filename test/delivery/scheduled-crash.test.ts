/**
 * Scheduled sends across a kill -9 and two instances (docs/design.md "Message reads, client
 * references, scheduled sends and cancel"): a worker process waits for messages scheduled a few
 * seconds ahead and is killed with SIGKILL before they are due; two workers started afterwards,
 * as two instances, hand them over. The simulators' logs of submitted parts say when each part
 * reached a carrier: none before its sendAt, none twice.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { pino } from "pino";
import { expect, it } from "vitest";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import { testServer } from "../support/database.ts";
import { eventually, insertMessages, testMessage } from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();

it("scheduled messages survive a kill -9 of the waiting worker and go once, never early", async () => {
  const sendAt = new Date(Date.now() + 5_000);
  const messages = Array.from({ length: 200 }, (_, i) =>
    testMessage(i % 2 === 0 ? "sched-a" : "sched-b", `+49151${String(50_000_000 + i)}`, {
      sendAt,
    }),
  );
  const ids = await insertMessages(fixture.store, messages);
  const submissions = fixture.store.db.collection<{ messageId: number; at: Date }>(
    "simulator_submissions",
  );

  const doomed = spawn(process.execPath, ["--import", "tsx", "test/support/delivery-process.ts"], {
    env: {
      ...process.env,
      TEST_MONGODB_URI: testServer().uri,
      DELIVERY_DB: fixture.store.db.databaseName,
      DELIVERY_LEASE_MS: "3000",
      DELIVERY_CARRIER: "simulator",
      DELIVERY_CLAIM_AHEAD: "40",
      DELIVERY_WINDOW: "20",
      DELIVERY_SEND_DELAY_MS: "0",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  await once(doomed.stdout, "data");
  // It waits for the due time; killed well before it.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  doomed.kill("SIGKILL");
  if (doomed.exitCode === null) await once(doomed, "exit");
  expect(await submissions.countDocuments({ messageId: { $in: ids } })).toBe(0);

  const workers = ["x", "y"].map((tag) => {
    const carrier = new SimulatorCarrier({
      db: fixture.store.db,
      sendDelayMs: 0,
      receiptDelayMs: 0,
      pollIntervalMs: 50,
      instanceId: `sim-${tag}`,
      window: 20,
      logSubmissions: true,
    });
    return new DeliveryWorker({
      store: fixture.store,
      carrier,
      logger: pino({ level: "silent" }),
      instanceId: `worker-${tag}`,
      pollIntervalMs: 50,
    });
  });
  for (const worker of workers) await worker.start();
  try {
    await eventually(
      async () =>
        (await fixture.store.messages.countDocuments({ _id: { $in: ids }, status: "ACCEPTED" })) ===
        0,
      60_000,
    );
  } finally {
    for (const worker of workers) await worker.stop();
  }
  const log = await submissions.find({ messageId: { $in: ids } }).toArray();
  expect(log).toHaveLength(ids.length);
  expect(new Set(log.map((e) => e.messageId)).size).toBe(ids.length);
  for (const entry of log) expect(entry.at.getTime()).toBeGreaterThanOrEqual(sendAt.getTime());
  const late = Math.max(...log.map((e) => e.at.getTime())) - sendAt.getTime();
  console.log(
    `scheduled after kill -9: 200 messages handed over, the last ${late} ms after sendAt`,
  );
});
