// Figure 13 (issues 16 and 25): figure 1's single-send throughput (POST /sms, JSON, one part, 32
// connections) with metrics and tracing on as production runs them, against off, in the same run:
// on is METRICS_PORT served and scraped every second, and traces sampled by the standard
// parent-based ratio sampler (OTEL_TRACES_SAMPLER=parentbased_traceidratio, a ratio of 0.1; a
// caller's sampled traceparent is still followed) and exported over OTLP/HTTP to a local receiver
// that accepts and drops them (bench/otlp-sink.ts, its own process); off is METRICS_PORT=0 and no
// OTEL_* variable. Beside it, the cost of tracing every request: the same with the SDK's default
// sampler ("all"). After a warm-up round, rounds take the modes in turn (each mode first in every
// third round), each on a fresh process and database; medians are compared. Beside them, the
// service's own CPU time per request in each mode, which the sharing of two cores does not blur.

import autocannon from "autocannon";
import { type BenchContext, createAccount } from "./common.ts";
import { cpuSeconds, FREE_PORT, median, startProcess } from "./processes.ts";

const CONNECTIONS = 32;
// For finding what costs: BENCH_FIGURE13_ON=metrics (or tracing) turns only that one on.
const ON = new Set((process.env.BENCH_FIGURE13_ON || "metrics,tracing").split(","));
// The ratio of the traces sampled in the measured mode; BENCH_FIGURE13_SAMPLE=1 measures every
// request traced (the SDK's default sampler) and leaves out the "all" mode, then the same.
const SAMPLE = process.env.BENCH_FIGURE13_SAMPLE || "0.1";
const EVERY_REQUEST = SAMPLE === "1";
type Mode = "off" | "on" | "all";
const MODES: readonly Mode[] = EVERY_REQUEST ? ["off", "on"] : ["off", "on", "all"];

export async function observabilityFigure(ctx: BenchContext) {
  if (!ctx.runs("13")) return;
  const seconds = ctx.quick ? 3 : 10;
  // Five rounds each: single rounds on this machine vary by up to 1.9x.
  const rounds = ctx.quick ? 2 : 5;
  ctx.log(`figure 13: POST /sms with metrics and tracing on vs off, ${rounds} round(s) each`);
  const sink = await startProcess("bench/otlp-sink.ts", {}, "/bytes");
  const results: Record<Mode, { rps: number; p99: number; cpuMs: number }[]> = {
    off: [],
    on: [],
    all: [],
  };
  // Round 0 is a warm-up round, not counted: the database's JIT and heap are fresh before it (the
  // first round of this figure ran up to 1.7x slower than the others, whichever mode it was).
  for (let round = 0; round <= rounds; round++) {
    // Each mode goes first in turn: none always meets the fresher machine.
    const order = MODES.map((_, i) => MODES[(round + i) % MODES.length] as Mode);
    for (const mode of order) {
      const db = `bench_observability_${mode}`;
      const metricsOn = mode !== "off" && ON.has("metrics");
      const env = ctx.serviceEnv(db, {
        SMS_RUN_WORKERS: "false",
        METRICS_PORT: metricsOn ? FREE_PORT : "0",
        ...(mode !== "off" &&
          ON.has("tracing") && {
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${sink.baseUrl}/v1/traces`,
            ...(mode === "on" &&
              !EVERY_REQUEST && {
                OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
                OTEL_TRACES_SAMPLER_ARG: SAMPLE,
              }),
          }),
      });
      const api = await startProcess("src/main.ts", env);
      const metricsPort = Number(api.env.METRICS_PORT);
      // A scraper as Prometheus would run it: once a second for the whole load.
      const scraper =
        metricsPort !== 0
          ? setInterval(() => {
              fetch(`http://127.0.0.1:${metricsPort}/metrics`)
                .then((r) => r.text())
                .catch(() => undefined);
            }, 1000)
          : undefined;
      try {
        const account = await createAccount(api.baseUrl);
        const body = JSON.stringify({
          to: "+4915112345678",
          text: "Hello from the benchmark",
          ...account,
        });
        const load = () =>
          autocannon({
            url: `${api.baseUrl}/sms`,
            method: "POST",
            connections: CONNECTIONS,
            duration: seconds,
            headers: { "content-type": "application/json" },
            body,
          });
        await load(); // warm-up: JIT, connection pool, id blocks
        // Every mode from a collected emulator heap (as in figure 2).
        await ctx.collectDatabaseHeap();
        const cpuBefore = cpuSeconds(api.pid);
        const measured = await load();
        // The service's own CPU per request: what on costs, apart from how the two cores were shared.
        const cpuMs = ((cpuSeconds(api.pid) - cpuBefore) * 1000) / measured.requests.total;
        ctx.log(
          `figure 13 round ${round}${round === 0 ? " (warm-up, not counted)" : ""} ${mode}: ${measured.requests.average.toFixed(0)} req/s, p99 ${measured.latency.p99} ms, service CPU ${(cpuMs * 1000).toFixed(0)} us/request`,
        );
        if (round > 0)
          results[mode].push({ rps: measured.requests.average, p99: measured.latency.p99, cpuMs });
      } finally {
        clearInterval(scraper);
        await api.stop();
        await ctx.dropDatabases(db);
      }
    }
  }
  const otlpBytes = Number(await (await fetch(`${sink.baseUrl}/bytes`)).text());
  await sink.stop();
  const off = median(results.off.map((r) => r.rps));
  const on = median(results.on.map((r) => r.rps));
  const all = results.all.length > 0 ? median(results.all.map((r) => r.rps)) : undefined;
  if (all !== undefined) {
    ctx.log(
      `figure 13: every request traced ${all.toFixed(0)} req/s, ${(all / off).toFixed(3)} of off`,
    );
  }
  ctx.figures.push({
    figure: `13. POST /sms requests/s with ${[...ON].join(" and ")} on (metrics scraped 1/s, ${EVERY_REQUEST ? "every request's trace" : `traces sampled parent-based at ${SAMPLE}`} to a local OTLP receiver)`,
    value: on,
    unit: "req/s",
    baseline: off,
    baselineName: "both off, same run",
    ratio: on / off,
    target: ">= 0.9 x off",
    met: on >= 0.9 * off,
    extra: {
      on_p99_ms: median(results.on.map((r) => r.p99)),
      off_p99_ms: median(results.off.map((r) => r.p99)),
      on_service_cpu_us_per_request: median(results.on.map((r) => r.cpuMs)) * 1000,
      off_service_cpu_us_per_request: median(results.off.map((r) => r.cpuMs)) * 1000,
      ...(all !== undefined && {
        every_request_traced_rps: all,
        every_request_traced_ratio: all / off,
        every_request_traced_p99_ms: median(results.all.map((r) => r.p99)),
        every_request_traced_service_cpu_us_per_request:
          median(results.all.map((r) => r.cpuMs)) * 1000,
      }),
      otlp_bytes_received: otlpBytes,
    },
  });
}
