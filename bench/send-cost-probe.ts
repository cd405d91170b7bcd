// A probe of what one single send costs the service: `POST /sms` (REST) and SendMessage over
// Connect (JSON) at a fixed rate below saturation, the service's CPU time (user + system, from
// /proc/<pid>/stat) over the requests answered. Services built from several checkouts
// (`--dirs a,b`, each with its `dist/`) are measured in turn in the same run, each door of each
// in short slices whose order rotates, so that the machine's changes of speed meet every side.
//
//   npx tsx bench/send-cost-probe.ts --dirs /tmp/before,. --rate 500 --seconds 4 --rounds 6
//
// Each dir is built first (`npm run build`, as `npm run bench` does) and its services run from
// that `dist/`; `--no-build` keeps the `dist/` each has. BENCH_NODE_OPTIONS (e.g. "--cpu-prof
// --cpu-prof-dir=/tmp/prof") is passed to the services. PROBE_STRACE=1: syscall counts of the
// first round's slices. PROBE_COUNTS=1: the driver's commands by name and collection and the
// socket writes, per request, of every slice (bench/command-counter.ts, preloaded).
// `--observability off,metrics,tracing,unsampled,on`: one service per mode of figure 13 in each
// dir (metrics served and scraped every second; traces sampled at PROBE_TRACE_SAMPLE, default
// 0.1, or at 0 for `unsampled`, to a local receiver), to tell what each of them costs a send.
// `--together`: each round's slices run at the same time rather than in turn, so every side meets
// the same moment of the machine (two services of the same build then read within about ±3 %
// of each other as a median of six rounds); `--rate 0`: no fixed rate, as many as each takes.

import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { MongoClient } from "mongodb";
import { startDatabase } from "../src/dev-database/embedded-mongo.ts";
import { ADMIN_TOKEN, createAccount, optionValue, sleep } from "./common.ts";
import {
  buildService,
  cpuSeconds,
  FREE_PORT,
  median,
  type ServiceProcess,
  startProcess,
} from "./processes.ts";

const dirs = optionValue("dirs", ".").split(",");
const rate = Number(optionValue("rate", "500"));
const seconds = Number(optionValue("seconds", "4"));
const rounds = Number(optionValue("rounds", "4"));
const doors = optionValue("doors", "rest,connect").split(",") as Door[];
type Door = "rest" | "connect";
type Observability = "off" | "metrics" | "tracing" | "unsampled" | "on";
const observability = optionValue("observability", "")
  .split(",")
  .filter(Boolean) as Observability[];
const together = process.argv.includes("--together");

if (!process.argv.includes("--no-build")) for (const dir of dirs) await buildService(dir);
if (process.env.PROBE_COUNTS) {
  const counter = join(dirname(fileURLToPath(import.meta.url)), "command-counter.ts");
  process.env.BENCH_NODE_OPTIONS = `${process.env.BENCH_NODE_OPTIONS ?? ""} --import ${counter}`;
}

const database = await startDatabase({ logger: (m) => process.stderr.write(`${m}\n`) });
const client = await new MongoClient(database.uri).connect();
const log = (m: string) => process.stderr.write(`probe: ${m}\n`);

interface Side {
  dir: string;
  db: string;
  api: ServiceProcess;
  bodies: Record<Door, { path: string; body: string; headers: Record<string, string> }>;
}
const sink = observability.some((mode) => mode !== "off" && mode !== "metrics")
  ? await startProcess("bench/otlp-sink.ts", {}, "/bytes")
  : undefined;
/** Figure 13's environment of a mode (bench/observability-figure.ts). */
const observabilityEnv = (mode: Observability): Record<string, string> => ({
  ...((mode === "metrics" || mode === "on") && { METRICS_PORT: FREE_PORT }),
  ...((mode === "tracing" || mode === "unsampled" || mode === "on") && {
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${sink?.baseUrl}/v1/traces`,
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: mode === "unsampled" ? "0" : (process.env.PROBE_TRACE_SAMPLE ?? "0.1"),
  }),
});
const sideSpecs =
  observability.length > 0
    ? dirs.flatMap((dir) =>
        observability.map((mode) => ({
          dir,
          name: dirs.length > 1 ? `${dir}:${mode}` : mode,
          env: observabilityEnv(mode),
        })),
      )
    : dirs.map((dir) => ({ dir, name: dir, env: {} }));
const sides: Side[] = [];
for (const [i, { dir, name, env }] of sideSpecs.entries()) {
  const db = `probe_send_${i}`;
  const api = await startProcess(
    "src/main.ts",
    {
      MONGODB_URI: database.uri,
      MONGODB_DATABASE: db,
      SMS_ADMIN_TOKEN: ADMIN_TOKEN,
      // Two services cannot both have the console's default port.
      OPERATOR_PORT: "0",
      LOG_LEVEL: "warn",
      SMS_RATE_LIMIT_RPS: "0",
      SMS_RUN_WORKERS: "false",
      ...env,
    },
    "/health",
    dir === "." ? undefined : dir,
  );
  log(`${name}: service pid ${api.pid}`);
  const account = await createAccount(api.baseUrl);
  const basic = `Basic ${Buffer.from(`${account.apiKey}:${account.apiSecret}`).toString("base64")}`;
  sides.push({
    dir: name,
    db,
    api,
    bodies: {
      rest: {
        path: "/sms",
        body: JSON.stringify({
          to: "+4915112345678",
          text: "Hello from the benchmark",
          ...account,
        }),
        headers: { "content-type": "application/json" },
      },
      connect: {
        path: "/sms.v1.MessagingService/SendMessage",
        body: JSON.stringify({ to: "+4915112345678", text: "Hello from the benchmark" }),
        headers: { "content-type": "application/json", authorization: basic },
      },
    },
  });
}

const load = (side: Side, door: Door, secs: number, fixedRate?: number) => {
  const { path, body, headers } = side.bodies[door];
  return autocannon({
    url: `${side.api.baseUrl}${path}`,
    method: "POST",
    connections: 32,
    duration: secs,
    headers,
    body,
    ...(fixedRate && { overallRate: fixedRate }),
  });
};

for (const side of sides) for (const door of doors) await load(side, door, 4);

/** Prometheus's scrape of a service that serves metrics, every second as figure 13's; returns its stop. */
function scrapeEverySecond(api: ServiceProcess): () => void {
  const port = Number(api.env.METRICS_PORT ?? 0);
  if (port === 0) return () => {};
  const scraper = setInterval(() => {
    fetch(`http://127.0.0.1:${port}/metrics`)
      .then((r) => r.text())
      .catch(() => undefined);
  }, 1000);
  return () => clearInterval(scraper);
}

/** PROBE_STRACE=1: syscall counts of the service over a slice (first round only). */
function strace(pid: number, key: string, round: number): ChildProcess | undefined {
  if (!process.env.PROBE_STRACE || round > 0) return undefined;
  const out = `/tmp/s43/strace-${key.replace(/[^a-z0-9]+/gi, "_")}.txt`;
  return spawn("strace", ["-f", "-c", "-p", String(pid), "-o", out], { stdio: "ignore" });
}

/** PROBE_COUNTS=1: the service's command and socket write counters (bench/command-counter.ts). */
async function serviceCounts(pid: number): Promise<Record<string, number> | undefined> {
  if (!process.env.PROBE_COUNTS) return undefined;
  process.kill(pid, "SIGUSR2");
  await sleep(200);
  return JSON.parse(readFileSync(`/tmp/command-counts-${pid}.json`, "utf8"));
}

/** The database server's operation counters, when it keeps them. */
async function opcounters(): Promise<Record<string, number> | undefined> {
  try {
    const status = await client.db("admin").command({ serverStatus: 1 });
    return status.opcounters as Record<string, number> | undefined;
  } catch {
    return undefined;
  }
}
const results = new Map<
  string,
  { cpu: number; requests: number; p99: number[]; errors: number; perSlice: number[] }
>();
/** One slice of `side`'s `door`: its CPU per request, and the counts asked for. */
async function measureSlice(side: Side, door: Door, round: number): Promise<string> {
  const key = `${side.dir} ${door}`;
  const tracer = strace(side.api.pid, key, round);
  // The server's counters are the whole server's: meaningless for slices run together.
  const ops = together ? undefined : await opcounters();
  const counted = await serviceCounts(side.api.pid);
  const before = cpuSeconds(side.api.pid);
  const stopScraping = scrapeEverySecond(side.api);
  const r = await load(side, door, seconds, rate);
  stopScraping();
  const cpu = cpuSeconds(side.api.pid) - before;
  const countedAfter = await serviceCounts(side.api.pid);
  const opsAfter = ops && (await opcounters());
  if (counted && countedAfter)
    log(
      `${key}: per request ${Object.entries(countedAfter)
        .map(([k, v]) => [k, (v - (counted[k] ?? 0)) / r.requests.total] as const)
        .filter(([, v]) => v > 0)
        .map(([k, v]) => `${k} ${v.toFixed(3)}`)
        .join(", ")}`,
    );
  if (tracer) {
    tracer.kill("SIGINT");
    await new Promise((resolve) => tracer.once("exit", resolve));
  }
  if (ops && opsAfter)
    log(
      `${key}: database commands per request ${Object.entries(opsAfter)
        .map(([k, v]) => `${k} ${((v - (ops[k] ?? 0)) / r.requests.total).toFixed(2)}`)
        .join(", ")}`,
    );
  const acc = results.get(key) ?? { cpu: 0, requests: 0, p99: [], errors: 0, perSlice: [] };
  acc.perSlice.push((1e6 * cpu) / r.requests.total);
  acc.cpu += cpu;
  acc.requests += r.requests.total;
  acc.p99.push(r.latency.p99);
  acc.errors += r.non2xx + r.errors;
  results.set(key, acc);
  await client.db(side.db).collection("messages").deleteMany({});
  return `${key} ${((1e6 * cpu) / r.requests.total).toFixed(0)}us`;
}

for (let round = 0; round < rounds; round++) {
  const slots = sides.flatMap((side) => doors.map((door) => ({ side, door })));
  const order = slots.map((_, i) => slots[(round + i) % slots.length] as (typeof slots)[0]);
  const line: string[] = [];
  if (together) {
    line.push(
      ...(await Promise.all(order.map(({ side, door }) => measureSlice(side, door, round)))),
    );
  } else {
    for (const { side, door } of order) line.push(await measureSlice(side, door, round));
  }
  log(`round ${round + 1}: ${line.join(", ")}`);
}
// Each round's ratio to the first checkout's same door: the pairs meet the same moment's noise.
for (const [key, r] of results) {
  const door = key.slice(key.lastIndexOf(" ") + 1);
  const first = results.get(`${sides[0]?.dir} ${door}`);
  const ratios = r.perSlice.map((v, i) => v / (first?.perSlice[i] ?? v));
  console.log(
    `${key}: ${((1e6 * r.cpu) / r.requests).toFixed(0)} us CPU/request over ${r.requests} requests (slices: median ${median(r.perSlice).toFixed(0)}, ${Math.min(...r.perSlice).toFixed(0)}-${Math.max(...r.perSlice).toFixed(0)}); to ${sides[0]?.dir}: median ${median(ratios).toFixed(2)}, ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}; p99 median ${median(r.p99)} ms, errors ${r.errors}`,
  );
}
for (const side of sides) await side.api.stop();
await sink?.stop();
await Promise.all(sides.map((s) => client.db(s.db).dropDatabase()));
await client.close();
await database.stop();
