// Figure 13 (issue 16): figure 1's single-send throughput (POST /sms, JSON, one part, 32
// connections) with metrics and tracing on against off, in the same run: on is METRICS_PORT
// served and scraped every second, and traces exported over OTLP/HTTP to a local receiver that
// accepts and drops them; off is METRICS_PORT=0 and no OTEL_* variable. Rounds alternate (each
// mode first in every other round), each on a fresh process and database; medians are compared.

import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import autocannon from "autocannon";
import { type BenchContext, createAccount } from "./common.ts";
import { freePort, median, startProcess } from "./processes.ts";

const CONNECTIONS = 32;
// For finding what costs: BENCH_FIGURE13_ON=metrics (or tracing) turns only that one on.
const ON = new Set((process.env.BENCH_FIGURE13_ON || "metrics,tracing").split(","));

/** An OTLP/HTTP endpoint that reads each export and answers 200; counts the spans' bytes. */
async function startSink() {
  let bytes = 0;
  const server = http.createServer((request, response) => {
    request.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    request.on("end", () =>
      response.writeHead(200, { "content-type": "application/json" }).end("{}"),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    bytes: () => bytes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export async function observabilityFigure(ctx: BenchContext) {
  if (!ctx.runs("13")) return;
  const seconds = ctx.quick ? 3 : 10;
  // Five rounds each: single rounds on this shared machine vary by up to 1.9x.
  const rounds = ctx.quick ? 2 : 5;
  ctx.log(`figure 13: POST /sms with metrics and tracing on vs off, ${rounds} round(s) each`);
  const sink = await startSink();
  const results: Record<"off" | "on", { rps: number; p99: number }[]> = { off: [], on: [] };
  for (let round = 0; round < rounds; round++) {
    // Each mode goes first in every other round: neither always meets the fresher machine.
    const order = round % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const);
    for (const mode of order) {
      const db = `bench_observability_${mode}`;
      const metricsPort = mode === "on" && ON.has("metrics") ? await freePort() : 0;
      const env = ctx.serviceEnv(db, {
        SMS_RUN_WORKERS: "false",
        METRICS_PORT: String(metricsPort),
        ...(mode === "on" && ON.has("tracing") && { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: sink.url }),
      });
      const api = await startProcess("src/main.ts", env);
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
        const measured = await load();
        results[mode].push({ rps: measured.requests.average, p99: measured.latency.p99 });
        ctx.log(
          `figure 13 round ${round + 1} ${mode}: ${measured.requests.average.toFixed(0)} req/s, p99 ${measured.latency.p99} ms`,
        );
      } finally {
        clearInterval(scraper);
        await api.stop();
        await ctx.dropDatabases(db);
      }
    }
  }
  await sink.close();
  const off = median(results.off.map((r) => r.rps));
  const on = median(results.on.map((r) => r.rps));
  ctx.figures.push({
    figure: `13. POST /sms requests/s with ${[...ON].join(" and ")} on (metrics scraped 1/s, traces to a local OTLP receiver)`,
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
      otlp_bytes_received: sink.bytes(),
    },
  });
}
