// Figures 22 and 23 of issue 42 (run.ts's ids "22", "23", "scheduled"): scheduled sends.
//   22. With 1 million messages scheduled days ahead in the service's database, figure 1's load
//       (POST /sms, 1 part, 32 connections) >= 0.9 x the same service without them, and a send's
//       time from its 200 to SENT (median of paced probes) <= 2 x + 0.5 s of the same without
//       them. Two services (workers on, the simulator answering at once), one database each on
//       the same emulator, measured in alternated rounds.
//   23. A 10000-message batch scheduled for one second (POST /sms-batch with sendAt a few seconds
//       ahead) is all handed to the carrier within the time the same batch sent at once takes,
//       + 2 s: from sendAt to the last submit_sm in the test SMSC's PDU log, against the
//       immediate batch's 200 to its last submit_sm; figure 11a's SMPP settings, alternated.
//
// The scheduled million is not sent through the API (hours on the emulator): one POST /sms-batch
// with sendAt stores 10000 the service's way, and copies of those documents (every field and
// index the service keeps) are inserted under ids the service's own sequence reserves
// (`reserveIds`), their times moved a quarter of an hour per copy so they spread over days.
// Seeding stops early, and the figure says so, past 7 minutes or 75 % of the emulator's heap.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDatabase } from "../src/dev-database/embedded-mongo.ts";
import { openStore } from "../src/store/database.ts";
import type { MessageDoc } from "../src/store/documents.ts";
import { reserveIds } from "../src/store/sequences.ts";
import { startSmsc } from "../test/support/smsc.ts";
import {
  type Account,
  type BenchContext,
  batchBody,
  batchMessagesIn,
  createAccount,
  postBatch,
  type Send,
  sendRate,
  sendSms,
  sleep,
} from "./common.ts";
import { contextOn } from "./database-context.ts";
import { median, percentile, type ServiceProcess, startProcess } from "./processes.ts";
import { submitTimes } from "./smpp-figure.ts";

const COPY_BATCH = 10_000;
const DAY = 86_400_000;
// The emulator inserts these copies at about 3000 a second (slower as its indexes grow): a million
// takes 5 to 6 minutes.
const SEED_LIMIT_MS = 420_000;
const HEAP_SHARE = 0.75;
/** Statuses a message leaves once its carrier's receipt is applied. */
const PENDING: MessageDoc["status"][] = ["ACCEPTED", "SENT"];

type Side = "none" | "ahead";

interface Seeded {
  count: number;
  seconds: number;
  /** Why seeding stopped short of the target; empty when it did not. */
  limit: string;
}

/**
 * Stores `target` messages of `account` scheduled 2 to 30 days ahead in `dbName`, the service's
 * way (see the header): one scheduled batch through the API, then copies of its documents.
 */
async function seedScheduled(
  ctx: BenchContext,
  api: ServiceProcess,
  account: Account,
  dbName: string,
  target: number,
): Promise<Seeded> {
  const store = openStore(ctx.client.db(dbName));
  const sendAt = new Date(Date.now() + 2 * DAY).toISOString();
  const body = JSON.parse(batchBody(account, COPY_BATCH, "See you on the day")) as object;
  const { id: batchId } = await postBatch(api.baseUrl, JSON.stringify({ ...body, sendAt }));
  // Copied as they wait for their day: their ACCEPTED notifications settled. Copies of pending
  // ones would be a million notifications due at once, which the service's notifier would then
  // work through during the figure (the cause of the 503s in the first full-size runs).
  const deadline = Date.now() + 120_000;
  while (await store.messages.findOne({ batchId, notifyAt: { $exists: true } })) {
    if (Date.now() > deadline)
      throw new Error("figure 22: the scheduled batch's notifications did not settle in 120 s");
    await sleep(200);
  }
  const originals = await store.messages.find({ batchId }).sort({ _id: 1 }).toArray();
  if (originals.length !== COPY_BATCH || !originals[0]?.sendAt)
    throw new Error(`figure 22: the scheduled batch stored ${originals.length} messages`);
  const started = performance.now();
  let count = originals.length;
  let limit = "";
  for (let copy = 1; count < target; copy++) {
    if (performance.now() - started > SEED_LIMIT_MS) {
      limit = `seeding time (${SEED_LIMIT_MS / 1000} s)`;
      break;
    }
    if (copy % 10 === 0) {
      const full = await heapFull(ctx);
      if (full) {
        limit = full;
        break;
      }
    }
    const n = Math.min(COPY_BATCH, target - count);
    const first = await reserveIds(store.counters, "message", n);
    // A quarter of an hour later per copy, wrapping within 28 days: spread, always days ahead.
    const shift = (copy * 15 * 60_000) % (28 * DAY);
    const later = (date: Date) => new Date(date.getTime() + shift);
    const docs = originals.slice(0, n).map(
      (doc, i): MessageDoc => ({
        ...doc,
        _id: first + i,
        ...(doc.sendAt && { sendAt: later(doc.sendAt) }),
        ...(doc.deliveryAt && { deliveryAt: later(doc.deliveryAt) }),
        expiresAt: later(doc.expiresAt),
      }),
    );
    await store.messages.insertMany(docs, { ordered: false });
    count += n;
    if (count % 100_000 === 0)
      ctx.log(
        `figure 22: ${count} scheduled in ${((performance.now() - started) / 1000).toFixed(0)} s`,
      );
  }
  const seconds = (performance.now() - started) / 1000;
  ctx.log(
    `figure 22: ${count} messages scheduled ahead in ${seconds.toFixed(0)} s${limit && `, stopped by ${limit}`}`,
  );
  return { count, seconds, limit };
}

/** Why the emulator's heap is too full to seed more (after a collection), or "". */
async function heapFull(ctx: BenchContext): Promise<string> {
  let heap = await ctx.databaseHeap();
  if (!heap || heap.usedBytes < HEAP_SHARE * heap.maxBytes) return "";
  await ctx.collectDatabaseHeap();
  heap = await ctx.databaseHeap();
  if (!heap || heap.usedBytes < HEAP_SHARE * heap.maxBytes) return "";
  const gb = (bytes: number) => (bytes / 1024 ** 3).toFixed(1);
  return `the emulator's heap (${gb(heap.usedBytes)} of ${gb(heap.maxBytes)} GB in use)`;
}

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
        status: { $in: PENDING },
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

async function figure23(ctx: BenchContext): Promise<void> {
  const count = ctx.quick ? 3_000 : 10_000;
  ctx.log(`figure 23 (issue 42): ${count} messages scheduled for one second, against sent at once`);
  const dbName = "bench_scheduled_second";
  const binds = 4;
  const smsc = await startSmsc({
    config: { receiptDelayMs: 0, answerDelayMs: 0 },
    log: (line) => ctx.log(line),
  });
  let api: ServiceProcess | undefined;
  try {
    // Figure 11a's settings: no TPS limit, 4 binds of window 10, the SMSC answering at once.
    api = await startProcess(
      "src/main.ts",
      ctx.serviceEnv(dbName, {
        SMS_CARRIER: "smpp",
        SMS_SMPP_URL: smsc.url,
        SMS_SMPP_TPS: "0",
        SMS_SMPP_BINDS: String(binds),
        SMS_SMPP_WINDOW: "10",
      }),
    );
    const service = api;
    const account = await createAccount(service.baseUrl);
    for (let i = 0; i < 100 && (await smsc.binds()).length < binds; i++) await sleep(100);
    const messages = ctx.client.db(dbName).collection<MessageDoc>("messages");
    const body = JSON.parse(batchBody(account, count, "Figure 23")) as object;
    const leadMs = ctx.quick ? 4_000 : 6_000;

    /** One batch: ms from its start (its 200, or its sendAt) to the last submit_sm; early ones. */
    const run = async (mode: "now" | "scheduled") => {
      await smsc.reset();
      await ctx.collectDatabaseHeap();
      // A whole second, far enough ahead for the POST to be answered before it.
      const sendAt = Math.ceil((Date.now() + leadMs) / 1000) * 1000;
      const payload =
        mode === "scheduled" ? { ...body, sendAt: new Date(sendAt).toISOString() } : body;
      const { id, ms: postMs } = await postBatch(service.baseUrl, JSON.stringify(payload), count);
      const answeredAt = Date.now();
      const log = await submitTimes(smsc, count, leadMs + 120_000);
      // Its receipts applied before it goes: a receipt for a deleted message is kept and tried
      // again for 10 minutes (delivery/receipts.ts), work that would land in the next run.
      const final = Date.now() + 60_000;
      while (Date.now() < final && (await batchMessagesIn(messages, id, { $in: PENDING }, 1)) > 0)
        await sleep(200);
      await messages.deleteMany({ batchId: id });
      if (log.length < count)
        throw new Error(`figure 23: ${mode}: ${log.length} of ${count} parts reached the SMSC`);
      const times = log.map((e) => e.at).sort((a, b) => a - b);
      const start = mode === "scheduled" ? sendAt : answeredAt;
      return {
        ms: (times.at(-1) as number) - start,
        firstMs: (times[0] as number) - start,
        early: times.filter((t) => t < sendAt).length,
        answeredBeforeSendAt: answeredAt < sendAt,
        postMs,
      };
    };
    await run("now"); // warm-up: JITs of the service and the SMSC
    const rounds = ctx.quick ? 1 : 3;
    const spans: Record<"now" | "scheduled", number[]> = { now: [], scheduled: [] };
    let early = 0;
    let lateAnswers = 0;
    const posts: number[] = [];
    // When the first part left, after the start: tells a late start from a slow drain.
    const firsts: Record<"now" | "scheduled", number[]> = { now: [], scheduled: [] };
    for (let round = 0; round < rounds; round++) {
      const order =
        round % 2 === 0 ? (["now", "scheduled"] as const) : (["scheduled", "now"] as const);
      for (const mode of order) {
        const result = await run(mode);
        spans[mode].push(result.ms);
        firsts[mode].push(result.firstMs);
        if (mode === "now") posts.push(result.postMs);
        if (mode === "scheduled") {
          early += result.early;
          if (!result.answeredBeforeSendAt) lateAnswers++;
        }
      }
    }
    ctx.log(`figure 23: scheduled ${spans.scheduled.map((t) => t.toFixed(0)).join(" ")} ms`);
    ctx.log(`figure 23: at once ${spans.now.map((t) => t.toFixed(0)).join(" ")} ms`);
    const value = median(spans.scheduled);
    const base = median(spans.now);
    ctx.figures.push({
      figure: `23 (issue 42). ${count} messages scheduled for one second: sendAt -> last submit_sm at the test SMSC (${binds} binds, window 10; median of ${rounds})`,
      value,
      unit: "ms",
      baseline: base,
      baselineName: `the same batch sent at once, its 200 -> last submit_sm, alternated`,
      ratio: value / base,
      target: "<= at once + 2000 ms, none before sendAt",
      met: early === 0 && lateAnswers === 0 && value <= base + 2000,
      extra: {
        parts_before_sendAt: early,
        posts_answered_after_sendAt: lateAnswers,
        at_once_post_ms: median(posts),
        scheduled_first_submit_ms: median(firsts.scheduled),
        at_once_first_submit_ms: median(firsts.now),
      },
    });
  } finally {
    await api?.stop();
    await smsc.stop();
    await ctx.dropDatabases(dbName);
  }
}

export async function scheduledFigures(ctx: BenchContext): Promise<void> {
  if (ctx.runs("22", "scheduled")) await figure22(ctx);
  if (ctx.runs("23", "scheduled")) await figure23(ctx);
}
