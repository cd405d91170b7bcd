// Figure 17 of issue 27 (run.ts's id "17" or "carriers"): what two carriers carry beside one.
// Each carrier is an SMSC of 200 TPS: a test SMSC admitting at most 200 submit_sm a second on
// its one bind (maxTps; ESME_RTHROTTLED above, which the adapter submits again later), and the
// carriers file saying tps: 200 for it, as an operator writes the rate of the account the SMSC
// sold. Both SMSCs answer at once and send receipts at once.
//   - two carriers: the default route split { alpha: 50, beta: 50 }, one batch;
//   - baseline, same run: a carriers file of alpha alone, one batch of half as many.
// The rate is parts submitted and acknowledged (submit_sm_resp ESME_ROK, the SMSCs' PDU files)
// per second over the middle 80 % of them, both SMSCs' merged. Target: two >= 1.8 x one. Beside
// them, one carrier with no TPS limit anywhere: the service's own ceiling at the moment's load.

import { mkdtempSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { carriersFile } from "../test/support/carriers-file.ts";
import { startSmsc, type TestSmsc } from "../test/support/smsc.ts";
import type { Pdu } from "../test/support/smsc-pdus.ts";
import { type BenchContext, batchBody, createAccount, postBatch, sleep } from "./common.ts";
import { isAccepted, PduTail } from "./pdu-tail.ts";
import { cpuSeconds, median, startProcess } from "./processes.ts";
import { rateOf, steadyRateOf } from "./smpp-figure.ts";

const TPS = 200;
const BINDS = 1;
// As figure 11b: at 200 parts/s the window must cover the time a part holds its place.
const WINDOW = 100;
const THROTTLED = 0x58;

interface Round {
  steadyRate: number;
  rate: number;
  perCarrier: number[];
  accepted: number;
  throttled: number;
  complete: boolean;
  /** The service's CPU time (user and system) per part acknowledged, from the batch to the end. */
  cpuMsPerPart: number;
}

async function round(
  ctx: BenchContext,
  smscs: { smsc: TestSmsc; file: string }[],
  count: number,
  tps = TPS,
  smscTps = tps,
): Promise<Round> {
  const dbName = "bench_two_carriers";
  const names = ["alpha", "beta"].slice(0, smscs.length);
  const file = carriersFile([
    "carriers:",
    ...smscs.map(
      ({ smsc }, i) =>
        `  - { name: ${names[i]}, url: "${smsc.url}", binds: ${BINDS}, window: ${WINDOW}, tps: ${tps} }`,
    ),
    "routes:",
    smscs.length === 1
      ? "  - { name: default, carriers: [alpha] }"
      : "  - { name: default, split: { alpha: 50, beta: 50 } }",
  ]);
  for (const { smsc } of smscs) {
    await smsc.reset();
    await smsc.configure({ maxTps: smscTps });
  }
  const tails = smscs.map(({ file: path }) => new PduTail(path, true));
  const service = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, { SMS_CARRIERS_FILE: file }),
  );
  try {
    const account = await createAccount(service.baseUrl);
    for (let i = 0; i < 200; i++) {
      const bound = await Promise.all(smscs.map(({ smsc }) => smsc.binds()));
      if (bound.every((b) => b.length >= BINDS)) break;
      await sleep(100);
    }
    const cpuBefore = cpuSeconds(service.pid);
    await postBatch(service.baseUrl, batchBody(account, count, "Figure 17"), count);
    const logs: Pdu[][] = smscs.map(() => []);
    const accepted = () => logs.reduce((n, log) => n + log.filter(isAccepted).length, 0);
    const deadline = Date.now() + ((3 * count) / ((tps || TPS) * smscs.length)) * 1000 + 60_000;
    while (accepted() < count && Date.now() < deadline) {
      await sleep(500);
      for (const [i, tail] of tails.entries()) for (const p of tail.read()) logs[i]?.push(p);
    }
    const cpu = cpuSeconds(service.pid) - cpuBefore;
    const times = (log: Pdu[]) => log.filter(isAccepted).map((p) => p.at);
    const merged = logs.flatMap(times).sort((a, b) => a - b);
    return {
      steadyRate: steadyRateOf(merged),
      rate: rateOf(merged),
      perCarrier: logs.map((log) => steadyRateOf(times(log))),
      accepted: merged.length,
      throttled: logs.flat().filter((p) => p.command === "submit_sm_resp" && p.status === THROTTLED)
        .length,
      complete: merged.length >= count,
      cpuMsPerPart: (cpu * 1000) / Math.max(1, merged.length),
    };
  } finally {
    await service.stop();
    await ctx.dropDatabases(dbName);
  }
}

export async function twoCarriersFigure(ctx: BenchContext): Promise<void> {
  if (!ctx.runs("17", "carriers")) return;
  ctx.log(`figure 17 (issue 27): a 50/50 split over two SMSCs of ${TPS} TPS beside one`);
  const dir = mkdtempSync(join(tmpdir(), "bench-two-carriers-"));
  const config = { receiptDelayMs: 0, answerDelayMs: 0, maxTps: TPS };
  const smscs: { smsc: TestSmsc; file: string }[] = [];
  try {
    for (const name of ["alpha", "beta"]) {
      const file = join(dir, `${name}.jsonl`);
      smscs.push({ smsc: await startSmsc({ config, pduFile: file, log: ctx.log }), file });
    }
    const seconds = ctx.quick ? 8 : 20;
    const one = TPS * seconds;
    // Alternated, the first of each pair turning, so both meet the same load from the machine.
    const rounds = ctx.quick ? 1 : 2;
    const loadBefore = loadavg()[0] ?? 0;
    // Warm-up (the service's JIT, the SMSCs' and the database's), not measured.
    await round(ctx, smscs.slice(0, 1), Math.ceil(one / 4), 0);
    const alone: Round[] = [];
    const split: Round[] = [];
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) alone.push(await round(ctx, smscs.slice(0, 1), one));
      split.push(await round(ctx, smscs, 2 * one));
      if (r % 2 === 1) alone.push(await round(ctx, smscs.slice(0, 1), one));
    }
    // What one carrier carries with no TPS limit on either side, at the machine's load of the
    // moment: below 2 x TPS, the service, not the carriers, bounds the figure.
    const ceiling = await round(ctx, smscs.slice(0, 1), one, 0);
    // The service's pacing alone: tps 200 in the file, the SMSC without a limit (no throttling
    // answers): tells the service's own pacing from the SMSC's refusals above 200 a second.
    const paced = await round(ctx, smscs.slice(0, 1), one, TPS, 0);
    const show = (runs: Round[]) => runs.map((x) => x.steadyRate.toFixed(1)).join(" ");
    ctx.log(
      `figure 17: one carrier ${show(alone)} parts/s, two carriers ${show(split)} parts/s, one carrier without a TPS limit ${show([ceiling])} parts/s, tps ${TPS} on an SMSC without a limit ${show([paced])} parts/s`,
    );
    const value = median(split.map((x) => x.steadyRate));
    const baseline = median(alone.map((x) => x.steadyRate));
    ctx.figures.push({
      figure: `17 (issue 27). Two carriers: parts/s submitted and acknowledged, split 50/50 over two SMSCs of ${TPS} TPS, one batch of ${2 * one} (median of ${rounds})`,
      value,
      unit: "parts/s (middle 80 %)",
      baseline,
      baselineName: `same run, one carrier of ${TPS} TPS, batch of ${one}`,
      ratio: value / baseline,
      target: ">= 1.8 x one carrier",
      met: [...alone, ...split].every((x) => x.complete) && value >= 1.8 * baseline,
      extra: {
        ...Object.fromEntries(
          split.flatMap((x, i) => [
            [`two_run_${i + 1}_per_s`, x.steadyRate],
            [`two_run_${i + 1}_alpha_per_s`, x.perCarrier[0] ?? 0],
            [`two_run_${i + 1}_beta_per_s`, x.perCarrier[1] ?? 0],
            [`two_run_${i + 1}_first_to_last_per_s`, x.rate],
            [`two_run_${i + 1}_throttled`, x.throttled],
          ]),
        ),
        ...Object.fromEntries(
          alone.flatMap((x, i) => [
            [`one_run_${i + 1}_per_s`, x.steadyRate],
            [`one_run_${i + 1}_first_to_last_per_s`, x.rate],
            [`one_run_${i + 1}_throttled`, x.throttled],
          ]),
        ),
        one_without_tps_limit_per_s: ceiling.steadyRate,
        two_cpu_ms_per_part: median(split.map((x) => x.cpuMsPerPart)),
        one_cpu_ms_per_part: median(alone.map((x) => x.cpuMsPerPart)),
        one_without_tps_limit_cpu_ms_per_part: ceiling.cpuMsPerPart,
        one_tps_limit_smsc_unlimited_per_s: paced.steadyRate,
        load_average_1m_before: loadBefore,
        load_average_1m_after: loadavg()[0] ?? 0,
        parts_acknowledged: [...alone, ...split].reduce((n, x) => n + x.accepted, 0),
      },
    });
  } finally {
    await Promise.all(smscs.map(({ smsc }) => smsc.stop()));
  }
}
