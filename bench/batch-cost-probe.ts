// A probe of what the spend controls and the toll-fraud guard cost a 10000-message batch (figure
// 2c), by CPU rather than time: the service runs in this process on its own emulator, and for each
// batch of an account with every control set and the guard on ("guarded") and of one with none and
// the guard off ("plain") it reports the database commands the batch caused (by command and
// collection, before the 200 and after it, counted from the driver's command monitoring until its
// background writes are done), this process's CPU time (to the 200 and in all) and garbage
// collection, and the emulator's CPU; beside them, the same for figure 2c's baseline (insertMany of
// copies of a guarded batch's stored documents). Each batch starts from a collected emulator heap.
// With `--profile DIR` each measured batch's CPU profile is written there as
// `<side>-<n>.cpuprofile` (only the batch, from its request to the end of its background writes,
// sampled every 100 µs), so the sides are told apart. Times to the 200 are printed too: noisy,
// the emulator shares the 2 cores with this process. The service runs from source (tsx), whose
// helpers cost a little more than the production build's.
//
//   npx tsx bench/batch-cost-probe.ts --batches 8 --profile /tmp/prof-batch

import { mkdirSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { PerformanceObserver } from "node:perf_hooks";
import { MongoClient } from "mongodb";
import { build } from "../src/app.ts";
import { loadConfig } from "../src/config/config.ts";
import { startDatabase } from "../src/dev-database/embedded-mongo.ts";
import { openStore } from "../src/store/database.ts";
import type { MessageDoc } from "../src/store/documents.ts";
import { ensureIndexes } from "../src/store/indexes.ts";
import {
  type Account,
  ADMIN_TOKEN,
  batchBody,
  createAccount,
  optionValue,
  postBatch,
  sleep,
  storedCopies,
} from "./common.ts";
import { collectEmulatorHeap, cpuSeconds, median } from "./processes.ts";

const batches = Number(optionValue("batches", "4"));
const profileDir = optionValue("profile", "");
const SIZE = 10_000;

const database = await startDatabase({ logger: (m) => process.stderr.write(`${m}\n`) });
// The emulator's CPU per batch too (its JVM's, from /proc), when the database is the emulator.
const emulatorPid = Number(/pid (\d+)/.exec(database.description)?.[1] ?? Number.NaN);
const databaseCpu = () => (Number.isNaN(emulatorPid) ? 0 : cpuSeconds(emulatorPid) * 1000);
const client = await new MongoClient(database.uri, { monitorCommands: true }).connect();
const commands = new Map<string, number>();
// Commands started before the batch's 200 and after it (the confirmation, the guard's events).
let answered = false;
client.on("commandStarted", (event) => {
  const target = event.command[event.commandName];
  const name = `${event.commandName} ${typeof target === "string" ? target : ""}`.trim();
  const key = `${name}${answered ? " (after the 200)" : ""}`;
  commands.set(key, (commands.get(key) ?? 0) + 1);
});
// The main thread's garbage collection, in ms.
let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ["gc"] });
const profiler = new Session();
if (profileDir) {
  mkdirSync(profileDir, { recursive: true });
  profiler.connect();
  await profiler.post("Profiler.enable");
  // A sample every 100 µs: a batch's 150–250 ms of CPU in a couple of thousand samples.
  await profiler.post("Profiler.setSamplingInterval", { interval: 100 });
}
const config = loadConfig({
  SMS_ADMIN_TOKEN: ADMIN_TOKEN,
  LOG_LEVEL: "silent",
  SMS_RUN_WORKERS: "false",
  SMS_RATE_LIMIT_RPS: "0",
  OPERATOR_PORT: "0",
  METRICS_PORT: "0",
});
const service = await build({ config, db: client.db("probe_batch") });
await service.app.listen({ port: 0, host: "127.0.0.1" });
await service.startBackground();
const address = service.app.server.address();
const baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;

async function admin(method: string, request: object) {
  const response = await fetch(`${baseUrl}/sms.admin.v1.AdminService/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify(request),
  });
  if (response.status !== 200) throw new Error(`${method}: ${await response.text()}`);
}

const plain = await createAccount(baseUrl, undefined, "plain");
const guarded = await createAccount(baseUrl, undefined, "guarded");
await admin("UpdateSpendControls", {
  apiKey: guarded.apiKey,
  spendControls: {
    allowedCountries: ["DE", "FR", "GB"],
    maxPricePerMessageMicros: "100000000",
    dailySpendLimitMicros: String(1e14),
  },
  updateMask: ["allowed_countries", "max_price_per_message_micros", "daily_spend_limit_micros"],
});
await admin("SetRiskOverrides", { apiKey: plain.apiKey, overrides: { mode: "off" } });

const text = "Your code is 123456. It expires in 10 minutes.";
type Side = "plain" | "guarded";
const accounts: Record<Side, Account> = { plain, guarded };
// Every batch to numbers new to the guard: it flags 9800 of the guarded account's.
const body = (side: Side, i: number) =>
  batchBody(accounts[side], SIZE, text, undefined, 10_000_000 + i * SIZE);
const cpu: Record<Side, number[]> = { plain: [], guarded: [] };
const cpuTo200: Record<Side, number[]> = { plain: [], guarded: [] };
const gc: Record<Side, number[]> = { plain: [], guarded: [] };
const wall: Record<Side, number[]> = { plain: [], guarded: [] };
const dbCpu: Record<Side, number[]> = { plain: [], guarded: [] };
const counted: Record<Side, Map<string, number>> = { plain: new Map(), guarded: new Map() };
const messages = client.db("probe_batch").collection<MessageDoc>("messages");
// Figure 2c's baseline beside them: insertMany of copies of a guarded batch's stored documents.
const baselineDb = client.db("probe_insert");
await ensureIndexes(openStore(baselineDb));
const baselineMessages = baselineDb.collection<MessageDoc>("messages");
let copies: ((firstId: number) => MessageDoc[]) | undefined;
const baseline = { cpu: [] as number[], dbCpu: [] as number[], wall: [] as number[] };

for (let i = 0; i < batches + 1; i++) {
  for (const side of (i % 2 === 0 ? ["plain", "guarded"] : ["guarded", "plain"]) as Side[]) {
    commands.clear();
    answered = false;
    const payload = body(side, i);
    // As the figure does: the emulator's heap collected first, so its CPU is the batch's own.
    if (!Number.isNaN(emulatorPid)) await collectEmulatorHeap(String(emulatorPid));
    if (profileDir && i > 0) await profiler.post("Profiler.start");
    const gcBefore = gcMs;
    const dbBefore = databaseCpu();
    const before = process.cpuUsage();
    const { id, ms } = await postBatch(baseUrl, payload);
    const usedTo200 = process.cpuUsage(before);
    answered = true;
    // The confirmation's flush and the guard's events are written after the 200.
    await sleep(500);
    const used = process.cpuUsage(before);
    const dbUsed = databaseCpu() - dbBefore;
    if (profileDir && i > 0) {
      const { profile } = await profiler.post("Profiler.stop");
      writeFileSync(`${profileDir}/${side}-${i}.cpuprofile`, JSON.stringify(profile));
    }
    if (i === 1) {
      const marked = await messages.countDocuments({ batchId: id, risk: { $exists: true } });
      console.log(`${side}: ${marked} of the batch flagged by the guard`);
    }
    if (side === "guarded") copies ??= await storedCopies(messages, id);
    await messages.deleteMany({ batchId: id });
    if (i === 0) continue; // warm-up
    cpu[side].push((used.user + used.system) / 1000);
    cpuTo200[side].push((usedTo200.user + usedTo200.system) / 1000);
    gc[side].push(gcMs - gcBefore);
    wall[side].push(ms);
    dbCpu[side].push(dbUsed);
    for (const [key, n] of commands) counted[side].set(key, (counted[side].get(key) ?? 0) + n);
  }
  const docs = copies?.(1 + i * SIZE) ?? [];
  if (!Number.isNaN(emulatorPid)) await collectEmulatorHeap(String(emulatorPid));
  const dbBefore = databaseCpu();
  const before = process.cpuUsage();
  const started = performance.now();
  await baselineMessages.insertMany(docs, { ordered: false });
  const ms = performance.now() - started;
  await sleep(500);
  const used = process.cpuUsage(before);
  const dbUsed = databaseCpu() - dbBefore;
  await baselineMessages.deleteMany({});
  if (i === 0) continue;
  baseline.cpu.push((used.user + used.system) / 1000);
  baseline.dbCpu.push(dbUsed);
  baseline.wall.push(ms);
}
const list = (values: number[]) =>
  `${values.map((v) => v.toFixed(0)).join(" ")} ms (median ${median(values).toFixed(0)})`;
for (const side of ["plain", "guarded"] as const) {
  console.log(`${side} (${accounts[side].apiKey.slice(0, 6)}…):`);
  console.log(`  CPU per batch ${list(cpu[side])}`);
  console.log(`  of which to the 200 ${list(cpuTo200[side])}`);
  console.log(`  garbage collection ${list(gc[side])}`);
  console.log(`  the emulator's CPU (10 ms ticks) ${list(dbCpu[side])}`);
  console.log(`  time to the 200 (noisy: the emulator shares the cores) ${list(wall[side])}`);
  const rows = [...counted[side]].sort(([a], [b]) => a.localeCompare(b));
  for (const [key, n] of rows) console.log(`  ${key}: ${(n / batches).toFixed(1)} per batch`);
}
console.log("insertMany of a guarded batch's stored documents (figure 2c's baseline):");
console.log(`  CPU (this process: the driver) ${list(baseline.cpu)}`);
console.log(`  the emulator's CPU (10 ms ticks) ${list(baseline.dbCpu)}`);
console.log(`  time (noisy) ${list(baseline.wall)}`);
await service.app.close();
await client.close();
await database.stop();
