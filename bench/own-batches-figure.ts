// Figure 6b (issue 25): an account's own batches share its turns. A 5-message batch posted right
// after the same account's 10000-message batch, and again every 2 s while that one drains, through
// the simulator with 50 ms send and 100 ms receipt delays (no throughput limit: the database and
// the service are the bottleneck) and status webhooks on. Value: the slowest small batch's time
// from its accept (the 200 of its POST) to its last message's final status change (from the
// database). Baseline: the same small batch with the account idle, median of five. Target: loaded
// <= 2 x quiet + 0.5 s. (Issue 25 found 46.9 s: the small batch waited behind its account's bulk.)
// BENCH_6B_BEFORE=<ref> runs the same on that commit too and reports it beside (before_*).

import type { StatusName } from "../src/domain/message-status.ts";
import type { MessageDoc } from "../src/store/documents.ts";
import { baselineCheckout } from "./baseline-checkout.ts";
import {
  type BenchContext,
  batchBody,
  batchMessagesIn,
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
  const current = await ownBatchesRun(ctx);
  // BENCH_6B_BEFORE=<ref>: the same run on that commit (e.g. be4d4c9, where issue 25 found it).
  const beforeRef = process.env.BENCH_6B_BEFORE;
  let before: RunResult | undefined;
  if (beforeRef) {
    const checkout = await baselineCheckout(beforeRef);
    try {
      before = await ownBatchesRun(ctx, checkout.dir);
    } finally {
      await checkout.remove();
    }
  }
  const { quiet, loaded } = current;
  const worst = loaded.some(Number.isNaN) ? Number.NaN : Math.max(...loaded);
  ctx.figures.push({
    figure: `6b. An account's own batches: its ${SMALL}-message batch right after its ${current.bigSize}-message batch (and every 2 s while that drains), simulator 50/100 ms, webhooks on; slowest accept->final`,
    value: worst,
    unit: "ms",
    baseline: median(quiet),
    baselineName: `the same ${SMALL}-message batch, account idle (median of ${QUIET_ROUNDS})`,
    ratio: worst / median(quiet),
    target: "<= 2 x quiet + 0.5 s",
    met: current.drained && worst <= 2 * median(quiet) + 500,
    extra: {
      ...summary(current),
      ...(before &&
        Object.fromEntries(Object.entries(summary(before)).map(([k, v]) => [`before_${k}`, v]))),
    },
  });
}

interface RunResult {
  bigSize: number;
  /** Accept -> final of each quiet small batch (ms). */
  quiet: number[];
  /** Accept -> final of each small batch posted while the big one drained (ms). */
  loaded: number[];
  /** Accept -> last SENT of the same, in order. */
  quietSent: number[];
  loadedSent: number[];
  drained: boolean;
  bigFinalSeconds: number;
  bigPostMs: number;
  webhooksReceived: number;
  webhooksExpected: number;
}

function summary(run: RunResult): Record<string, number> {
  return {
    first_ms: run.loaded[0] ?? Number.NaN,
    loaded_median_ms: median(run.loaded),
    slowest_ms: Math.max(...run.loaded),
    first_sent_ms: run.loadedSent[0] ?? Number.NaN,
    slowest_sent_ms: Math.max(...run.loadedSent),
    quiet_median_ms: median(run.quiet),
    quiet_max_ms: Math.max(...run.quiet),
    quiet_sent_median_ms: median(run.quietSent),
    small_batches: run.loaded.length,
    big_final_s: run.bigFinalSeconds,
    big_post_ms: run.bigPostMs,
    webhooks_received: run.webhooksReceived,
    webhooks_expected: run.webhooksExpected,
  };
}

/** One run on this checkout, or on the checkout in `cwd`. */
async function ownBatchesRun(ctx: BenchContext, cwd?: string): Promise<RunResult> {
  const bigSize = ctx.quick ? 2_500 : 10_000;
  const dbName = cwd ? "bench_own_batches_before" : "bench_own_batches";
  const tag = cwd ? "figure 6b (before)" : "figure 6b";
  const receiver = await startReceiver();
  const service = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, {
      SMS_SIM_SEND_DELAY_MS: "50",
      SMS_SIM_RECEIPT_DELAY_MS: "100",
      SMS_WEBHOOK_ALLOW_PRIVATE: "true",
    }),
    "/health",
    cwd,
  );
  const messages = ctx.client.db(dbName).collection<MessageDoc>("messages");
  try {
    const base = service.baseUrl;
    const account = await createAccount(base, receiver.url("/own"), "bench-own");
    const smallBody = batchBody(account, SMALL, "Small batch of the benchmark");

    /** Posts a small batch; resolves with its accept time and id. */
    const postSmall = async () => {
      const { id } = await postBatch(base, smallBody, SMALL);
      return { id, acceptedAt: Date.now() };
    };
    /** Accept -> last SENT and last final status change of a small batch, once final (ms). */
    const times = async (small: { id: number; acceptedAt: number }, waitMs: number) => {
      const done = async () =>
        (await batchMessagesIn(messages, small.id, { $in: FINAL })) === SMALL;
      const deadline = Date.now() + waitMs;
      while (!(await done())) {
        if (Date.now() > deadline) return { sent: Number.NaN, final: Number.NaN };
        await sleep(50);
      }
      const changes = await changeTimes(ctx.client, dbName, { batchId: small.id });
      return {
        sent: lastChange(changes, ["SENT"]) - small.acceptedAt,
        final: lastChange(changes, FINAL) - small.acceptedAt,
      };
    };

    // Warm-up, then the quiet baseline: the account has nothing else to do.
    await times(await postSmall(), 30_000);
    const quiet: { sent: number; final: number }[] = [];
    for (let round = 0; round < QUIET_ROUNDS; round++) {
      quiet.push(await times(await postSmall(), 30_000));
      await sleep(500);
    }
    ctx.log(`${tag}: quiet ${quiet.map((t) => t.final.toFixed(0)).join(" ")} ms`);

    // Loaded: the big batch, a small one right after it, and another every 2 s while it drains.
    const big = await postBatch(
      base,
      batchBody(account, bigSize, "Big batch of the benchmark"),
      bigSize,
    );
    const bigAcceptedAt = Date.now();
    const smalls = [await postSmall()];
    const bigDone = async () => (await batchMessagesIn(messages, big.id, { $nin: FINAL }, 1)) === 0;
    let drained = false;
    while (!drained && Date.now() - bigAcceptedAt < 300_000) {
      await sleep(PROBE_INTERVAL_MS);
      drained = await bigDone();
      if (!drained) smalls.push(await postSmall());
    }
    const loaded: { sent: number; final: number }[] = [];
    for (const small of smalls) loaded.push(await times(small, 60_000));
    const bigChanges = await changeTimes(ctx.client, dbName, { batchId: big.id });
    ctx.log(`${tag}: loaded ${loaded.map((t) => t.final.toFixed(0)).join(" ")} ms`);
    ctx.log(`${tag}: loaded, to SENT ${loaded.map((t) => t.sent.toFixed(0)).join(" ")} ms`);
    // Every webhook of both batches arrives (at least once) before the run is done.
    const webhooksExpected = 3 * (bigSize + SMALL * (smalls.length + 1 + QUIET_ROUNDS));
    await waitUntil(() => receiver.first.size >= webhooksExpected, 120_000);
    return {
      bigSize,
      quiet: quiet.map((t) => t.final),
      loaded: loaded.map((t) => t.final),
      quietSent: quiet.map((t) => t.sent),
      loadedSent: loaded.map((t) => t.sent),
      drained,
      bigFinalSeconds: (lastChange(bigChanges, FINAL) - bigAcceptedAt) / 1000,
      bigPostMs: big.ms,
      webhooksReceived: receiver.first.size,
      webhooksExpected,
    };
  } finally {
    await service.stop();
    receiver.close();
    await ctx.dropDatabases(dbName);
  }
}

/** The time of the last status change to one of `statuses` in `changes` (epoch ms). */
function lastChange(changes: Map<string, number>, statuses: readonly string[]): number {
  let last = Number.NaN;
  for (const [key, at] of changes)
    if (statuses.some((status) => key.endsWith(`:${status}`)))
      last = Number.isNaN(last) ? at : Math.max(last, at);
  return last;
}
