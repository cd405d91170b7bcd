// Figure 22 of issue 42 (run.ts's ids "22" and "scheduled"): with 1 million messages scheduled
// days ahead in the service's database (scheduled-seeding.ts), figure 1's load (POST /sms, 1
// part, 32 connections) >= 0.9 x the same service without them, and a send's time from its 200
// to SENT (median of paced probes) <= 2 x + 0.5 s of the same without them. Two services (workers
// on, the simulator answering at once), one database each on the same database server, measured
// in alternated rounds.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDatabase } from "../src/dev-database/embedded-mongo.ts";
import type { MessageDoc } from "../src/store/documents.ts";
import {
  type Account,
  type BenchContext,
  createAccount,
  PENDING_RECEIPT,
  type Send,
  sendRate,
  sendSms,
  sleep,
} from "./common.ts";
import { contextOn } from "./database-context.ts";
import { median, percentile, type ServiceProcess, startProcess } from "./processes.ts";
import { seedScheduled } from "./scheduled-seeding.ts";

const DAY = 86_400_000;

type Side = "none" | "ahead";

/**
 * Waits until none of `account`'s messages due before tomorrow waits for its carrier or its
 * receipt (a SENT message is due at its ttl's end), so one side's delivery work is done before
 * the other side is measured.
 */
async function drained(ctx: BenchContext, dbName: string, account: Account, timeoutMs: number) {
  const messages = ctx.client.db(dbName).collection<MessageDoc>("messages");
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    // The account's due index, bounded a day ahead: the scheduled ones are days ahead; claimed
    // ones have their due time at their lease's end, seconds ahead.
    const left = await messages.findOne(
      {
        accountId: account.apiKey,
        deliveryAt: { $lte: new Date(Date.now() + DAY) },
        status: { $in: PENDING_RECEIPT },
      },
      { projection: { _id: 1 } },
    );
    if (!left) return;
    await sleep(200);
  }
  throw new Error(`figure 22: ${dbName}'s sends were not all SENT in ${timeoutMs / 1000} s`);
}

/**
 * Seconds until `api` answers five single sends in a row with 200 within 250 ms each (a send a
 * second, at most 5 minutes): the figure measures a service holding the scheduled messages, not
 * the aftermath of their seeding (a million inserts in minutes, which the emulator and the
 * service's change stream take a while to work through; until then sends can meet the store's
 * deadline and answer 503).
 */
async function settled(api: ServiceProcess, account: Account): Promise<number> {
  const started = Date.now();
  let prompt = 0;
  while (prompt < 5) {
    if (Date.now() - started > 300_000)
      throw new Error("figure 22: the seeded service did not answer promptly within 5 minutes");
    const sent = Date.now();
    const response = await fetch(`${api.baseUrl}/sms`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...account, to: "+4915112345678", text: "Settled?" }),
    });
    await response.arrayBuffer();
    prompt = response.status === 200 && Date.now() - sent < 250 ? prompt + 1 : 0;
    await sleep(1000);
  }
  return Math.round((Date.now() - started) / 1000);
}

/** Paced single sends (one every 200 ms); each one's ms from its 200 to its SENT. */
async function timesToSent(
  ctx: BenchContext,
  api: ServiceProcess,
  dbName: string,
  account: Account,
  count: number,
): Promise<number[]> {
  const sends: Promise<Send>[] = [];
  for (let i = 0; i < count; i++) {
    sends.push(sendSms(api.baseUrl, { ...account, to: "+4915112345678", text: "Probe" }));
    await sleep(200);
  }
  const done = await Promise.all(sends);
  const messages = ctx.client.db(dbName).collection<MessageDoc>("messages");
  const ids = done.map((s) => s.id);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const docs = await messages
      .find({ _id: { $in: ids } }, { projection: { notifications: 1 } })
      .toArray();
    const sentAt = new Map<number, number>();
    for (const doc of docs) {
      const sent = doc.notifications.find((n) => n.status === "SENT");
      if (sent) sentAt.set(doc._id, sent.createdAt.getTime());
    }
    if (sentAt.size === ids.length)
      return done.map((s) => (sentAt.get(s.id) as number) - s.acceptedAt);
    if (Date.now() > deadline) throw new Error(`figure 22: probes of ${dbName} not SENT in 60 s`);
    await sleep(200);
  }
}

/**
 * On the emulator, figure 22 runs on an emulator of its own on the H2 store (`npm start`'s
 * default database), which keeps documents off the JVM's heap: in memory, a million of them fill
 * a heap of many GB whose collections stop the emulator past the driver's timeouts (see
 * docs/benchmarks.md). Both sides share that server, as they share the run's on another one.
 */
async function figure22(ctx: BenchContext): Promise<void> {
  if ((await ctx.databaseHeap()) === undefined) return figure22On(ctx);
  const dataDir = await mkdtemp(join(tmpdir(), "sms-bench-scheduled-"));
  const database = await startDatabase({
    dataDir,
    logger: (m) => ctx.log(`figure 22: ${m}`),
    emulatorMaxHeap: process.env.BENCH_EMULATOR_HEAP,
  });
  const on = await contextOn(ctx, database);
  try {
    await figure22On(on);
  } finally {
    await on.client.close().catch(() => undefined);
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function figure22On(ctx: BenchContext): Promise<void> {
  const target = ctx.quick ? 100_000 : 1_000_000;
  ctx.log(`figure 22 (issue 42): sends beside ${target} messages scheduled ahead, against none`);
  const dbs: Record<Side, string> = {
    none: "bench_scheduled_none",
    ahead: "bench_scheduled_ahead",
  };
  const env = (db: string) =>
    ctx.serviceEnv(db, {
      SMS_RUN_WORKERS: "true",
      SMS_SIM_SEND_DELAY_MS: "0",
      SMS_SIM_RECEIPT_DELAY_MS: "0",
    });
  const apis: Partial<Record<Side, ServiceProcess>> = {};
  try {
    apis.none = await startProcess("src/main.ts", env(dbs.none));
    apis.ahead = await startProcess("src/main.ts", env(dbs.ahead));
    const services = apis as Record<Side, ServiceProcess>;
    const accounts: Record<Side, Account> = {
      none: await createAccount(services.none.baseUrl),
      ahead: await createAccount(services.ahead.baseUrl),
    };
    const seeded = await seedScheduled(ctx, services.ahead, accounts.ahead, dbs.ahead, target);
    // The seeding's garbage collected now, not in a pause of the emulator during the warm-up.
    await ctx.collectDatabaseHeap();
    const settleSeconds = await settled(services.ahead, accounts.ahead);
    ctx.log(`figure 22: the seeded service answered promptly again after ${settleSeconds} s`);

    const seconds = ctx.quick ? 3 : 10;
    const rounds = ctx.quick ? 2 : 4;
    const probes = ctx.quick ? 10 : 25;
    // Warm-up of both (JIT, pools, id blocks), then alternated rounds, each side from a collected
    // emulator heap and with the other's sends all SENT.
    for (const side of ["none", "ahead"] as const) {
      await sendRate(services[side].baseUrl, accounts[side], seconds, "22");
      await drained(ctx, dbs[side], accounts[side], 120_000);
      await timesToSent(ctx, services[side], dbs[side], accounts[side], 3);
    }
    const rates: Record<Side, number[]> = { none: [], ahead: [] };
    const sentTimes: Record<Side, number[]> = { none: [], ahead: [] };
    for (let round = 0; round < rounds; round++) {
      const order: Side[] = round % 2 === 0 ? ["none", "ahead"] : ["ahead", "none"];
      for (const side of order) {
        await ctx.collectDatabaseHeap();
        rates[side].push(await sendRate(services[side].baseUrl, accounts[side], seconds, "22"));
        await drained(ctx, dbs[side], accounts[side], 120_000);
        await ctx.collectDatabaseHeap();
        sentTimes[side].push(
          ...(await timesToSent(ctx, services[side], dbs[side], accounts[side], probes)),
        );
      }
    }
    for (const side of ["none", "ahead"] as const)
      ctx.log(`figure 22: ${side} ${rates[side].map((r) => r.toFixed(0)).join(" ")} req/s`);
    const rate = median(rates.ahead);
    const baseRate = median(rates.none);
    const sorted = (side: Side) => [...sentTimes[side]].sort((a, b) => a - b);
    const sent = median(sentTimes.ahead);
    const baseSent = median(sentTimes.none);
    const scale = seeded.count === target ? "" : ` (target ${target}: ${seeded.limit})`;
    const extra = {
      scheduled: seeded.count,
      seed_seconds: seeded.seconds,
      settle_seconds: settleSeconds,
    };
    ctx.figures.push({
      figure: `22a (issue 42). POST /sms requests/s (figure 1's load, workers on) with ${seeded.count} messages scheduled days ahead${scale}`,
      value: rate,
      unit: "req/s",
      baseline: baseRate,
      baselineName: `same run, a service with none (medians of ${rounds} alternated rounds)`,
      ratio: rate / baseRate,
      target: ">= 0.9 x without them",
      met: seeded.count === target && rate >= 0.9 * baseRate,
      extra,
    });
    ctx.figures.push({
      figure: `22b (issue 42). A send's 200 -> SENT with ${seeded.count} messages scheduled days ahead${scale}, median of ${sentTimes.ahead.length} paced sends`,
      value: sent,
      unit: "ms",
      baseline: baseSent,
      baselineName: "same run, a service with none",
      ratio: sent / baseSent,
      target: "<= 2 x + 500 ms of without them",
      met: seeded.count === target && sent <= 2 * baseSent + 500,
      extra: {
        p95_ms: percentile(sorted("ahead"), 95),
        baseline_p95_ms: percentile(sorted("none"), 95),
      },
    });
  } finally {
    await Promise.all(Object.values(apis).map((api) => api.stop()));
    await ctx.dropDatabases(dbs.none, dbs.ahead);
  }
}

export async function scheduledAheadFigure(ctx: BenchContext): Promise<void> {
  if (ctx.runs("22", "scheduled")) await figure22(ctx);
}
