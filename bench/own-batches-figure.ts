// Figure 6b (issue 25): an account's own batches share its turns. A 5-message batch posted right
// after the same account's 10000-message batch, and again every 2 s while that one drains, through
// the simulator with 50 ms send and 100 ms receipt delays (no throughput limit: the database and
// the service are the bottleneck) and status webhooks on. Value: the slowest small batch's time
// from its accept (the 200 of its POST) to its last message's final status change (from the
// database). Baseline: the same small batch with the account idle, median of five. Target: loaded
// <= 2 x quiet + 0.5 s. (Issue 25 found 46.9 s: the small batch waited behind its account's bulk.)

import type { MessageDoc, StatusName } from "../src/store/documents.ts";
import {
  type BenchContext,
  batchBody,
  changeTimes,
  createAccount,
  postBatch,
  sleep,
  startReceiver,
  waitUntil,
} from "./common.ts";
import { median, startProcess } from "./processes.ts";

const SMALL = 5;
const QUIET_ROUNDS = 5;
const PROBE_INTERVAL_MS = 2_000;
const FINAL: StatusName[] = ["DELIVERED", "DELIVERY_ERROR", "SEND_ERROR"];

export async function ownBatchesFigure(ctx: BenchContext) {
  const bigSize = ctx.quick ? 2_500 : 10_000;
  const dbName = "bench_own_batches";
  const receiver = await startReceiver();
  const service = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, {
      SMS_SIM_SEND_DELAY_MS: "50",
      SMS_SIM_RECEIPT_DELAY_MS: "100",
      SMS_WEBHOOK_ALLOW_PRIVATE: "true",
    }),
  );
  const messages = ctx.client.db(dbName).collection<MessageDoc>("messages");
  try {
    const base = service.baseUrl;
    const account = await createAccount(base, receiver.url("/own"), "bench-own");
    const smallBody = batchBody(account, SMALL, "Small batch of the benchmark");

    /** Accept -> last SENT of each small batch measured, in order (the delivery queue's share). */
    const sentTimes: number[] = [];
    /** Posts a small batch; resolves with its accept time and id. */
    const postSmall = async () => {
      const { id } = await postBatch(base, smallBody, SMALL);
      return { id, acceptedAt: Date.now() };
    };
    /** Accept -> last final status change of a small batch, once it is final (ms). */
    const finalAfter = async (small: { id: number; acceptedAt: number }, waitMs: number) => {
      const done = async () =>
        (await messages.countDocuments({ batchId: small.id, status: { $in: FINAL } })) === SMALL;
      const deadline = Date.now() + waitMs;
      while (!(await done())) {
        if (Date.now() > deadline) return Number.NaN;
        await sleep(50);
      }
      const changes = await changeTimes(ctx.client, dbName, { batchId: small.id });
      sentTimes.push(lastChange(changes, ["SENT"]) - small.acceptedAt);
      return lastChange(changes, FINAL) - small.acceptedAt;
    };

    // Warm-up, then the quiet baseline: the account has nothing else to do.
    await finalAfter(await postSmall(), 30_000);
    const quietTimes: number[] = [];
    for (let round = 0; round < QUIET_ROUNDS; round++) {
      quietTimes.push(await finalAfter(await postSmall(), 30_000));
      await sleep(500);
    }
    const quiet = median(quietTimes);
    ctx.log(`figure 6b: quiet ${quietTimes.map((t) => t.toFixed(0)).join(" ")} ms`);

    // Loaded: the big batch, a small one right after it, and another every 2 s while it drains.
    const big = await postBatch(
      base,
      batchBody(account, bigSize, "Big batch of the benchmark"),
      bigSize,
    );
    const bigAcceptedAt = Date.now();
    const smalls = [await postSmall()];
    const bigDone = async () =>
      (await messages.countDocuments({ batchId: big.id, status: { $nin: FINAL } })) === 0;
    let drained = false;
    while (!drained && Date.now() - bigAcceptedAt < 300_000) {
      await sleep(PROBE_INTERVAL_MS);
      drained = await bigDone();
      if (!drained) smalls.push(await postSmall());
    }
    const loadedTimes: number[] = [];
    for (const small of smalls) loadedTimes.push(await finalAfter(small, 60_000));
    const bigChanges = await changeTimes(ctx.client, dbName, { batchId: big.id });
    const bigSeconds = (lastChange(bigChanges, FINAL) - bigAcceptedAt) / 1000;
    const loadedSent = sentTimes.slice(-loadedTimes.length);
    ctx.log(`figure 6b: loaded ${loadedTimes.map((t) => t.toFixed(0)).join(" ")} ms`);
    ctx.log(`figure 6b: loaded, to SENT ${loadedSent.map((t) => t.toFixed(0)).join(" ")} ms`);
    // Every webhook of both batches arrives (at least once) before the figure is done.
    const expectedWebhooks = 3 * (bigSize + SMALL * (smalls.length + 1 + QUIET_ROUNDS));
    await waitUntil(() => receiver.first.size >= expectedWebhooks, 120_000);

    const first = loadedTimes[0] ?? Number.NaN;
    const worst = loadedTimes.some(Number.isNaN) ? Number.NaN : Math.max(...loadedTimes);
    const limit = 2 * quiet + 500;
    ctx.figures.push({
      figure: `6b. An account's own batches: its ${SMALL}-message batch right after its ${bigSize}-message batch (and every 2 s while that drains), simulator 50/100 ms, webhooks on; slowest accept->final`,
      value: worst,
      unit: "ms",
      baseline: quiet,
      baselineName: `the same ${SMALL}-message batch, account idle (median of ${QUIET_ROUNDS})`,
      ratio: worst / quiet,
      target: "<= 2 x quiet + 0.5 s",
      met: drained && worst <= limit,
      extra: {
        first_ms: first,
        first_sent_ms: loadedSent[0] ?? Number.NaN,
        slowest_sent_ms: Math.max(...loadedSent),
        quiet_sent_median_ms: median(sentTimes.slice(1, 1 + QUIET_ROUNDS)),
        small_batches: smalls.length,
        loaded_median_ms: median(loadedTimes),
        quiet_min_ms: Math.min(...quietTimes),
        quiet_max_ms: Math.max(...quietTimes),
        big_final_s: bigSeconds,
        big_post_ms: big.ms,
        webhooks_received: receiver.first.size,
        webhooks_expected: expectedWebhooks,
      },
    });
  } finally {
    await service.stop();
    receiver.close();
  }
  await ctx.dropDatabases(dbName);
}

/** The time of the last status change to one of `statuses` in `changes` (epoch ms). */
function lastChange(changes: Map<string, number>, statuses: readonly string[]): number {
  let last = Number.NaN;
  for (const [key, at] of changes)
    if (statuses.some((status) => key.endsWith(`:${status}`)))
      last = Number.isNaN(last) ? at : Math.max(last, at);
  return last;
}
