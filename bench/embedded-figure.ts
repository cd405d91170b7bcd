// Figure 12 (issue 14): what a new user's `npm start` gets. With no MONGODB_URI and no mongod to
// be had, `npm start` runs on the emulator's H2 store (`startDatabase({ dataDir })`, here in a
// temporary directory instead of .data/). Figure 4a's burst (one batch of `count` messages through
// the simulator with zero delays, notifications/s until all 3 x count webhooks arrived) runs on it
// fresh, and again after `history` delivered messages were stored and the database restarted (as
// the next `npm start` does: its indexes rebuilt from the store), each beside the same burst on the
// run's own database (the in-memory emulator here), alternated, after a warm-up burst on each
// server and after each restart. Medians of 3 rounds (the machine is shared: single bursts vary
// by 2x).

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDatabase } from "../src/dev-database/embedded-mongo.ts";
import { openStore } from "../src/store/database.ts";
import type { MessageDoc } from "../src/store/documents.ts";
import { ensureIndexes } from "../src/store/indexes.ts";
import { acceptedMessage } from "../src/store/messages.ts";
import type { BenchContext } from "./common.ts";
import { contextOn } from "./database-context.ts";
import { median } from "./processes.ts";
import { webhookRun } from "./webhook-run.ts";

const DB_NAME = "bench_embedded";
const BATCH = 10_000;

/**
 * `count` messages of another account, delivered and notified long ago, as the service leaves
 * them (off both queues), with the id counters past them, in the service's collections.
 */
async function storeHistory(ctx: BenchContext, count: number) {
  const store = openStore(ctx.client.db(DB_NAME));
  await ensureIndexes(store);
  const then = new Date(Date.now() - 86_400_000);
  const CHUNK = 5_000;
  for (let first = 1; first <= count; first += CHUNK) {
    const docs: MessageDoc[] = [];
    for (let id = first; id < first + CHUNK && id <= count; id++) {
      const doc = acceptedMessage(
        {
          id,
          accountId: "history",
          batchId: Math.ceil(id / BATCH),
          to: `+49151${10_000_000 + (id % BATCH)}`,
          from: "SMSINFO",
          text: "A message of the past",
          parts: 1,
          ttl: 21_600,
        },
        then,
      );
      delete doc.deliveryAt;
      delete doc.notifyAt;
      doc.status = "DELIVERED";
      doc.carrierIds = [`sim-${id}`];
      doc.notifications = (["ACCEPTED", "SENT", "DELIVERED"] as const).map((status) => ({
        status,
        state: "delivered",
        createdAt: then,
        attempts: [{ at: then, httpStatus: 200, durationMs: 2 }],
      }));
      docs.push(doc);
    }
    await store.messages.insertMany(docs, { ordered: false });
  }
  // The service seeded the counters at its start: move them past the stored history.
  await store.counters.bulkWrite(
    [
      { _id: "message", seq: count },
      { _id: "batch", seq: Math.ceil(count / BATCH) },
    ].map(({ _id, seq }) => ({
      updateOne: { filter: { _id }, update: { $max: { seq } }, upsert: true },
    })),
  );
}

export async function embeddedFigure(ctx: BenchContext) {
  if (!ctx.runs("12")) return;
  const count = ctx.quick ? 3_000 : BATCH;
  const history = ctx.quick ? 50_000 : 200_000;
  const rounds = ctx.quick ? 1 : 3;
  const dataDir = await mkdtemp(join(tmpdir(), "sms-bench-embedded-"));
  const log = (m: string) => ctx.log(`figure 12: ${m}`);
  let database = await startDatabase({ dataDir, logger: log });
  let on = await contextOn(ctx, database);
  try {
    if (database.kind !== "emulator")
      log(`npm start's chain gave ${database.kind} here, not the emulator's H2 store`);
    const burst = async (c: BenchContext, dbName: string) => {
      const run = await webhookRun(c, { mode: "burst", count, dbName });
      return { ...run, rate: run.complete ? run.rate : Number.NaN };
    };
    // A warm-up burst (the JIT of the emulator and the service) on a database of its own, before
    // the measured runs on each server and after each restart, so every measured burst meets a
    // warm JVM.
    const warmUp = async (c: BenchContext, what: string) => {
      const run = await webhookRun(c, {
        mode: "burst",
        count: Math.floor(count / 3),
        dbName: "bench_embedded_warm_up",
      });
      log(`warm-up ${what}: ${run.rate.toFixed(0)}/s`);
    };
    await warmUp(ctx, "in memory");
    await warmUp(on, "H2");

    // Fresh: alternated with the in-memory runs.
    const memory: number[] = [];
    const fresh: number[] = [];
    for (let round = 0; round < rounds; round++) {
      memory.push((await burst(ctx, "bench_embedded_memory")).rate);
      fresh.push((await burst(on, DB_NAME)).rate);
      log(
        `fresh round ${round + 1}: in memory ${memory.at(-1)?.toFixed(0)}/s, H2 ${fresh.at(-1)?.toFixed(0)}/s`,
      );
    }

    // After `history` stored messages and a restart of the database (each round: the run drops
    // its database when done, the history with it).
    const afterHistory: number[] = [];
    const storeSeconds: number[] = [];
    const restartSeconds: number[] = [];
    for (let round = 0; round < rounds; round++) {
      memory.push((await burst(ctx, "bench_embedded_memory")).rate);
      let started = performance.now();
      await storeHistory(on, history);
      storeSeconds.push((performance.now() - started) / 1000);
      await on.client.close();
      await database.stop();
      started = performance.now();
      database = await startDatabase({ dataDir, logger: log });
      restartSeconds.push((performance.now() - started) / 1000);
      on = await contextOn(ctx, database);
      await warmUp(on, "H2 after the restart");
      afterHistory.push((await burst(on, DB_NAME)).rate);
      log(
        `after ${history} round ${round + 1}: stored in ${storeSeconds.at(-1)?.toFixed(1)} s, restarted in ${restartSeconds.at(-1)?.toFixed(1)} s; in memory ${memory.at(-1)?.toFixed(0)}/s, H2 ${afterHistory.at(-1)?.toFixed(0)}/s`,
      );
    }

    const memoryRate = median(memory);
    const freshRate = median(fresh);
    const historyRate = median(afterHistory);
    ctx.figures.push({
      figure: `12. npm start's default database (${database.kind === "emulator" ? "emulator, H2 store" : database.kind}): burst of one ${count}-message batch (4a), fresh and after ${history} stored messages + restart, median of ${rounds}`,
      value: Math.min(freshRate, historyRate),
      unit: "notifications/s",
      baseline: memoryRate,
      baselineName: `the same burst on the run's database (in memory), median of ${memory.length}`,
      ratio: Math.min(freshRate, historyRate) / memoryRate,
      target: `fresh and after ${history}: >= 0.5 x in memory; after ${history} within 20 % of fresh`,
      met:
        freshRate >= 0.5 * memoryRate &&
        historyRate >= 0.5 * memoryRate &&
        Math.abs(historyRate - freshRate) <= 0.2 * freshRate,
      extra: {
        fresh_per_s: freshRate,
        after_history_per_s: historyRate,
        history_over_fresh: historyRate / freshRate,
        fresh_over_memory: freshRate / memoryRate,
        history_store_s: median(storeSeconds),
        restart_s: median(restartSeconds),
      },
    });
  } finally {
    await on.client.close().catch(() => undefined);
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
