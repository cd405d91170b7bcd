// Figures 8 and 9 (issue 9): webhooks to receivers that answer slowly or never.
//   8. Duplicates from a slow receiver: 10 accounts, each with its own path on a receiver answering
//      after 2 s, each posting a batch of 1000 (30000 notifications, zero simulator delays);
//      duplicates are webhooks whose id+status arrived before. Baseline: the same with the receiver
//      answering at once.
//   9. A hanging receiver (account A's status URL never answers) beside account C's on the same
//      host and port, another path: C's p95 from status change to webhook receipt while A's batch
//      of 2000 is notified, beside C's p95 with A idle.

import {
  type BenchContext,
  batchBody,
  changeTimes,
  createAccount,
  pacedSends,
  postBatch,
  type Receiver,
  type Send,
  sleep,
  startReceiver,
  waitUntil,
} from "./common.ts";
import { percentile, startProcess } from "./processes.ts";

// ---- 8. Slow receivers. At 2 s per answer, 30000 notifications take about two minutes only with
// about 500 requests in flight (250/s): 10 accounts, each with its own path on one receiver (one
// host and port), 50 requests in flight per receiver and per account, 500 in all; the global limit
// (2000) is raised above that so that the per-receiver and per-account limits hold the work back.
// All 30000 are due within a few seconds and sent at 250/s, each account's 3000 at 25/s: they wait
// in the service from tens of seconds up to two minutes (p50_wait_s, max_wait_s), far beyond the
// notifier's 30 s lease, so a claim of more of a receiver's work than it can send within its lease
// must be kept alive, or its notifications are claimed and sent again.
// (076ed69 shows no duplicates here: a host answering in >= 2 s is "slow" for it and its excess
// work goes back to the database. Its 15-25 % came from a receiver answering in 1.9 s at the
// default concurrency of 64: 1024 messages claimed per pass against 33 sends/s. This harness on
// 076ed69 with that receiver, 1 account x 1000 messages: 855 duplicates of 3000, 28.5 %.)
const SLOW_ACCOUNTS = 10;
const SLOW_ANSWER_MS = 2_000;
const SLOW_ENV = {
  SMS_SIM_SEND_DELAY_MS: "0",
  SMS_SIM_RECEIPT_DELAY_MS: "0",
  SMS_WEBHOOK_ALLOW_PRIVATE: "true",
  SMS_WEBHOOK_CONCURRENCY: "2000",
  SMS_WEBHOOK_RECEIVER_CONCURRENCY: "50",
  SMS_WEBHOOK_ACCOUNT_CONCURRENCY: "50",
};

async function duplicatesRun(ctx: BenchContext, answerMs: number, dbName: string) {
  const perAccount = ctx.quick ? 300 : 1_000;
  const expected = 3 * SLOW_ACCOUNTS * perAccount;
  const receiver = await startReceiver(() => answerMs);
  const service = await startProcess("src/main.ts", ctx.serviceEnv(dbName, SLOW_ENV));
  const distinct = () => receiver.first.size;
  const arrivals = () => receiver.arrivals.length;
  try {
    const accounts = [];
    for (let i = 0; i < SLOW_ACCOUNTS; i++)
      accounts.push(await createAccount(service.baseUrl, receiver.url(`/hook/${i}`), `bench-${i}`));
    const started = Date.now();
    for (const account of accounts)
      await postBatch(service.baseUrl, batchBody(account, perAccount, "Slow receiver"), perAccount);
    const complete = await waitUntil(() => distinct() >= expected, ctx.quick ? 180_000 : 360_000);
    const lastFirst = Math.max(0, ...receiver.first.values());
    // A duplicate may follow its first copy: listen on until nothing arrived for 10 s (at most 60 s).
    const lingerStart = Date.now();
    let seen = arrivals();
    let quietSince = Date.now();
    while (Date.now() - quietSince < 10_000 && Date.now() - lingerStart < 60_000) {
      await sleep(500);
      if (arrivals() !== seen) {
        seen = arrivals();
        quietSince = Date.now();
      }
    }
    const changes = await changeTimes(ctx.client, dbName);
    const waits = [...receiver.first]
      .map(([key, at]) => at - (changes.get(key) ?? at))
      .sort((a, b) => a - b);
    return {
      duplicates: receiver.duplicates(),
      complete,
      expected,
      distinct: distinct(),
      arrivals: arrivals(),
      seconds: (lastFirst - started) / 1000,
      p50_wait_s: percentile(waits, 50) / 1000,
      max_wait_s: (waits.at(-1) ?? Number.NaN) / 1000,
    };
  } finally {
    await service.stop();
    receiver.close();
    await ctx.dropDatabases(dbName);
  }
}

async function slowReceiverFigure(ctx: BenchContext) {
  const atOnce = await duplicatesRun(ctx, 0, "bench_duplicates_base");
  ctx.log(`figure 8: receivers answering at once: ${atOnce.duplicates} duplicates`);
  const slow = await duplicatesRun(ctx, SLOW_ANSWER_MS, "bench_duplicates");
  const allowed = Math.floor(slow.expected / 1000);
  ctx.figures.push({
    figure: `8. Duplicate webhooks, ${SLOW_ACCOUNTS} accounts' receiver paths answering after ${SLOW_ANSWER_MS / 1000} s, ${slow.expected} notifications`,
    value: slow.duplicates,
    unit: "duplicates",
    baseline: atOnce.duplicates,
    baselineName: "the receiver answering at once",
    target: `<= 0.1 % (${allowed})`,
    met: slow.complete && slow.duplicates <= allowed,
    extra: {
      duplicate_percent: (100 * slow.duplicates) / slow.expected,
      distinct: slow.distinct,
      expected: slow.expected,
      arrivals: slow.arrivals,
      seconds: slow.seconds,
      p50_wait_s: slow.p50_wait_s,
      max_wait_s: slow.max_wait_s,
      baseline_distinct: atOnce.distinct,
      baseline_seconds: atOnce.seconds,
    },
  });
}

// ---- 9. A hanging receiver beside another receiver on the same host and port.
const STATUSES = ["ACCEPTED", "SENT", "DELIVERED"];

/** Status change -> receipt of every notification of `sends`; one still missing after `waitMs` counts until now (a lower bound). */
async function notificationDelays(
  ctx: BenchContext,
  dbName: string,
  receiver: Receiver,
  sends: Send[],
  waitMs: number,
) {
  const keys = sends.flatMap((send) => STATUSES.map((status) => `${send.id}:${status}`));
  await waitUntil(() => keys.every((key) => receiver.first.has(key)), waitMs);
  const end = Date.now();
  const changes = await changeTimes(ctx.client, dbName, { _id: { $in: sends.map((s) => s.id) } });
  const acceptedAt = new Map(sends.map((s) => [s.id, s.acceptedAt]));
  let missing = 0;
  const delays = keys
    .map((key) => {
      const at = receiver.first.get(key);
      if (at === undefined) missing++;
      const changed = changes.get(key) ?? acceptedAt.get(Number(key.split(":")[0])) ?? end;
      return (at ?? end) - changed;
    })
    .sort((a, b) => a - b);
  return {
    notifications: keys.length,
    missing,
    p50: percentile(delays, 50),
    p95: percentile(delays, 95),
    p99: percentile(delays, 99),
  };
}

async function hangingReceiverFigure(ctx: BenchContext) {
  const dbName = "bench_hanging";
  const batchSize = 2_000;
  const quietMs = ctx.quick ? 8_000 : 20_000;
  const loadedMs = ctx.quick ? 15_000 : 40_000;
  const receiver = await startReceiver((path) => (path === "/a" ? "never" : 0));
  const service = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, { SMS_WEBHOOK_ALLOW_PRIVATE: "true" }),
  );
  try {
    const base = service.baseUrl;
    const hanging = await createAccount(base, receiver.url("/a"), "bench-a");
    const probe = {
      ...(await createAccount(base, receiver.url("/c"), "bench-c")),
      to: "+4915123456789",
      text: "Single send of account C",
    };
    const never = () => false;
    const warm = await pacedSends(base, probe, 100, never, 1_000);
    await notificationDelays(ctx, dbName, receiver, warm, 30_000);
    const quietSends = await pacedSends(base, probe, 100, never, quietMs);
    const quiet = await notificationDelays(ctx, dbName, receiver, quietSends, 30_000);
    ctx.log(`figure 9: quiet p95 ${quiet.p95} ms over ${quiet.notifications} notifications`);

    await postBatch(base, batchBody(hanging, batchSize, "Hanging receiver"), batchSize);
    const loadedSends = await pacedSends(base, probe, 100, never, loadedMs);
    const loaded = await notificationDelays(ctx, dbName, receiver, loadedSends, 60_000);
    ctx.log(`figure 9: loaded p95 ${loaded.p95} ms over ${loaded.notifications} notifications`);
    const hangingRequests = receiver.arrivals.filter((a) => a.path === "/a").length;
    ctx.figures.push({
      figure: `9. Hanging receiver: account C's webhooks (POST /sms every 100 ms) while account A's batch of ${batchSize} notifies a URL that never answers on the same host and port, p95 change->receipt`,
      value: loaded.p95,
      unit: "ms",
      baseline: quiet.p95,
      baselineName: "C's p95, account A idle",
      ratio: loaded.p95 / quiet.p95,
      target: "<= 2 x quiet p95",
      met: loaded.missing === 0 && quiet.missing === 0 && loaded.p95 <= 2 * quiet.p95,
      extra: {
        notifications: loaded.notifications,
        missing: loaded.missing,
        p50_ms: loaded.p50,
        p99_ms: loaded.p99,
        quiet_notifications: quiet.notifications,
        quiet_missing: quiet.missing,
        quiet_p50_ms: quiet.p50,
        quiet_p99_ms: quiet.p99,
        hanging_requests: hangingRequests,
      },
    });
  } finally {
    await service.stop();
    receiver.close();
  }
  await ctx.dropDatabases(dbName);
}

export async function webhookFigures(ctx: BenchContext) {
  if (ctx.runs("8")) {
    ctx.log("figure 8: duplicate webhooks from slow receivers");
    await slowReceiverFigure(ctx);
  }
  if (ctx.runs("9")) {
    ctx.log("figure 9: a hanging receiver beside another on the same host and port");
    await hangingReceiverFigure(ctx);
  }
}
