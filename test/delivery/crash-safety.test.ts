/**
 * Crash-safe submission (issue 9, design "Carrier: SMPP 3.4": a crash may resubmit at most the
 * parts that were in flight, never a whole claim). A worker process is killed with SIGKILL while it
 * delivers a batch; a second worker finishes the batch. The simulator's log of submitted parts
 * counts what reached the carrier twice.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { pino } from "pino";
import { expect, it } from "vitest";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import { commitBatch } from "../support/batches.ts";
import { testServer } from "../support/database.ts";
import { eventually, insertMessages, nextTestId, testMessage } from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
const WINDOW = 20;

it("a worker killed mid-delivery leaves at most its window of parts to be submitted twice", async () => {
  const batchId = nextTestId();
  // One- and two-part messages: the window counts parts.
  const batch = Array.from({ length: 600 }, (_, i) =>
    testMessage("crash", `+49151${String(20_000_000 + i)}`, {
      batchId,
      ...(i % 3 === 0 && {
        parts: 2,
        segments: [
          { id: 1_000_000 + 2 * i, text: "first part" },
          { id: 1_000_001 + 2 * i, text: "second part" },
        ],
      }),
    }),
  );
  const ids = await insertMessages(fixture.store, batch);
  await commitBatch(fixture.store, batchId, "crash");
  const submissions = fixture.store.db.collection("simulator_submissions");

  const doomed: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", "test/support/delivery-process.ts"],
    {
      env: {
        ...process.env,
        TEST_MONGODB_URI: testServer().uri,
        DELIVERY_DB: fixture.store.db.databaseName,
        DELIVERY_WINDOW: String(WINDOW),
        // Short, so the survivor need not wait long; renewed every second meanwhile.
        DELIVERY_LEASE_MS: "3000",
        DELIVERY_SEND_DELAY_MS: "20",
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  try {
    // Killed once it is well into the batch.
    await eventually(async () => (await submissions.countDocuments({})) >= 200, 30_000);
  } finally {
    doomed.kill("SIGKILL");
    if (doomed.exitCode === null) await once(doomed, "exit");
  }
  const submittedByTheDead = await submissions.countDocuments({});
  expect(submittedByTheDead).toBeLessThan(800); // really killed in the middle (800 parts in all)

  const carrier = new SimulatorCarrier({
    db: fixture.store.db,
    sendDelayMs: 0,
    receiptDelayMs: 0,
    window: WINDOW,
    logSubmissions: true,
    instanceId: "sim-survivor",
  });
  const survivor = new DeliveryWorker({
    store: fixture.store,
    carrier,
    logger: pino({ level: "silent" }),
    instanceId: "worker-survivor",
    pollIntervalMs: 50,
  });
  await survivor.start();
  try {
    await eventually(
      async () =>
        (await fixture.store.messages.countDocuments({ _id: { $in: ids }, status: "ACCEPTED" })) ===
        0,
      60_000,
    );
  } finally {
    await survivor.stop();
  }

  const twice = await submissions
    .aggregate<{ n: number }>([
      { $group: { _id: { m: "$messageId", p: "$partIndex" }, n: { $sum: 1 } } },
      { $match: { n: { $gt: 1 } } },
    ])
    .toArray();
  const everyPart = await submissions
    .aggregate([{ $group: { _id: { m: "$messageId", p: "$partIndex" } } }])
    .toArray();
  // Every part reached the carrier; at most the window's parts twice, never more than twice.
  expect(everyPart).toHaveLength(800);
  expect(twice.length).toBeLessThanOrEqual(WINDOW);
  expect(twice.every((t) => t.n === 2)).toBe(true);
  // The survivor knew which parts it submitted again (their attempt was recorded before).
  expect(survivor.stats().resubmittedParts).toBeGreaterThanOrEqual(twice.length);
  expect(survivor.stats().resubmittedParts).toBeLessThanOrEqual(WINDOW);
  console.log(
    `crash safety: killed after ${submittedByTheDead} of 800 parts; ${twice.length} parts submitted twice (window ${WINDOW}); survivor resubmitted ${survivor.stats().resubmittedParts}`,
  );
});
