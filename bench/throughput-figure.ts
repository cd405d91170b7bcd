// Figure 10 (issue 9): burst notification throughput (figure 4a: one batch, zero simulator
// delays, notifications/s until all 3 x count webhooks arrived) on this checkout beside the code
// before issue 9 (BENCH_BASELINE_REF, default 076ed69), run from a temporary git worktree
// (bench/baseline-checkout.ts), alternately, against the same database server.

import { baselineCheckout } from "./baseline-checkout.ts";
import type { BenchContext } from "./common.ts";
import { median } from "./processes.ts";
import { webhookRun } from "./webhook-run.ts";

const BASELINE_REF = process.env.BENCH_BASELINE_REF || "076ed69";
export async function throughputFigure(ctx: BenchContext) {
  if (!ctx.runs("10")) return;
  const count = ctx.quick ? 3_000 : 10_000;
  // Five rounds: single bursts on this shared machine vary by up to 2x, a median of three by 10 %.
  const rounds = ctx.quick ? 1 : 5;
  ctx.log(`figure 10: burst webhooks, this checkout vs ${BASELINE_REF}, ${rounds} round(s)`);
  const baseline = await baselineCheckout(BASELINE_REF);
  const current: { rate: number; complete: boolean }[] = [];
  const old: { rate: number; complete: boolean }[] = [];
  try {
    // A warm-up burst first (the emulator's JIT, when figure 10 runs alone), then the rounds,
    // alternated, so that neither side always meets a fresher database server.
    const warmUp = await webhookRun(ctx, {
      mode: "burst",
      count: Math.floor(count / 3),
      dbName: "bench_burst_warm_up",
    });
    ctx.log(`figure 10 warm-up: ${warmUp.rate.toFixed(0)}/s`);
    const runOld = () =>
      webhookRun(ctx, { mode: "burst", count, dbName: "bench_burst_old", cwd: baseline.dir });
    const runCurrent = () => webhookRun(ctx, { mode: "burst", count, dbName: "bench_burst" });
    for (let round = 0; round < rounds; round++) {
      // Each side goes first in every other round.
      const oldFirst = round % 2 === 0;
      const first = await (oldFirst ? runOld() : runCurrent());
      const second = await (oldFirst ? runCurrent() : runOld());
      const [oldRun, currentRun] = oldFirst ? [first, second] : [second, first];
      old.push(oldRun);
      current.push(currentRun);
      ctx.log(
        `figure 10 round ${round + 1}: ${baseline.commit} ${oldRun.rate.toFixed(0)}/s, this checkout ${currentRun.rate.toFixed(0)}/s`,
      );
    }
  } finally {
    await baseline.remove();
  }
  const value = median(current.map((r) => r.rate));
  const base = median(old.map((r) => r.rate));
  const complete = [...current, ...old].every((r) => r.complete);
  ctx.figures.push({
    figure: `10. Status webhooks, burst: one batch of ${count} x ACCEPTED/SENT/DELIVERED (4a), this checkout vs ${baseline.commit}, median of ${rounds}`,
    value,
    unit: "notifications/s",
    baseline: base,
    baselineName: `commit ${baseline.commit} (before issue 9)`,
    ratio: value / base,
    target: ">= 0.9 x the old code",
    met: complete && value >= 0.9 * base,
    extra: {
      min_per_s: Math.min(...current.map((r) => r.rate)),
      max_per_s: Math.max(...current.map((r) => r.rate)),
      old_min_per_s: Math.min(...old.map((r) => r.rate)),
      old_max_per_s: Math.max(...old.map((r) => r.rate)),
      incomplete_runs: [...current, ...old].filter((r) => !r.complete).length,
    },
  });
}
