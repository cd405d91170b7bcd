/**
 * Crash tests of the delivery worker: a batch of one- and two-part messages, a worker process
 * (test/support/delivery-process.ts) killed with SIGKILL once it is well into the batch, and a
 * survivor in this process that finishes it.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { pino } from "pino";
import type { Carrier } from "../../src/delivery/carrier.ts";
import { DeliveryWorker, type DeliveryWorkerStats } from "../../src/delivery/worker.ts";
import type { Store } from "../../src/store/database.ts";
import { commitBatch } from "./batches.ts";
import { testServer } from "./database.ts";
import { eventually, insertMessages, nextTestId, testMessage } from "./fixtures.ts";

/** 600 messages, every third of two parts: 800 parts. Returns the message ids. */
export async function insertCrashBatch(store: Store, firstNumber: number): Promise<number[]> {
  const batchId = nextTestId();
  const batch = Array.from({ length: 600 }, (_, i) =>
    testMessage("crash", `+49151${String(firstNumber + i)}`, {
      batchId,
      ...(i % 3 === 0 && {
        parts: 2,
        segments: [
          { id: firstNumber + 2 * i, text: "first part" },
          { id: firstNumber + 2 * i + 1, text: "second part" },
        ],
      }),
    }),
  );
  const ids = await insertMessages(store, batch);
  await commitBatch(store, batchId, "crash");
  return ids;
}

/**
 * Runs a worker process on `store`'s database with `env` (see delivery-process.ts) and kills it
 * with SIGKILL once `submitted()` reaches `atLeast`.
 */
export async function killWorkerMidDelivery(
  store: Store,
  env: Record<string, string>,
  submitted: () => Promise<number>,
  atLeast: number,
): Promise<void> {
  const doomed = spawn(process.execPath, ["--import", "tsx", "test/support/delivery-process.ts"], {
    env: {
      ...process.env,
      TEST_MONGODB_URI: testServer().uri,
      DELIVERY_DB: store.db.databaseName,
      // Short, so the survivor need not wait long; renewed every second meanwhile.
      DELIVERY_LEASE_MS: "3000",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await eventually(async () => (await submitted()) >= atLeast, 60_000);
  } finally {
    doomed.kill("SIGKILL");
    if (doomed.exitCode === null) await once(doomed, "exit");
  }
}

/** A survivor worker on `carrier` works until none of `ids` is ACCEPTED; returns its counters. */
export async function finishDelivery(
  store: Store,
  carrier: Carrier,
  ids: number[],
): Promise<DeliveryWorkerStats> {
  const survivor = new DeliveryWorker({
    store,
    carrier,
    logger: pino({ level: "silent" }),
    instanceId: "worker-survivor",
    pollIntervalMs: 50,
  });
  await survivor.start();
  try {
    await eventually(
      async () =>
        (await store.messages.countDocuments({ _id: { $in: ids }, status: "ACCEPTED" })) === 0,
      60_000,
    );
  } finally {
    await survivor.stop();
  }
  return survivor.stats();
}
