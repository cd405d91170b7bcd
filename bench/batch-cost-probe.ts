// A probe of what the spend controls and the toll-fraud guard cost a 10000-message batch (figure
// 2c), without timings: the service runs in this process on its own emulator, and for each batch
// of an account with every control set and the guard on ("guarded") and of one with none and the
// guard off ("plain") it reports the database commands the batch caused (by command and
// collection, counted from the driver's command monitoring until its background writes are done)
// and this process's CPU time. Run it under `node --cpu-prof` for where that CPU goes:
//
//   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/batch-cost-probe.ts --batches 6

import { MongoClient } from "mongodb";
import { build } from "../src/app.ts";
import { loadConfig } from "../src/config/config.ts";
import { startDatabase } from "../src/dev-database/embedded-mongo.ts";
import { type Account, ADMIN_TOKEN, batchBody, createAccount, postBatch, sleep } from "./common.ts";
import { median } from "./processes.ts";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};
const batches = Number(arg("batches", "4"));
const SIZE = 10_000;

const database = await startDatabase({ logger: (m) => process.stderr.write(`${m}\n`) });
const client = await new MongoClient(database.uri, { monitorCommands: true }).connect();
const commands = new Map<string, number>();
client.on("commandStarted", (event) => {
  const target = event.command[event.commandName];
  const key = `${event.commandName} ${typeof target === "string" ? target : ""}`.trim();
  commands.set(key, (commands.get(key) ?? 0) + 1);
});
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
const counted: Record<Side, Map<string, number>> = { plain: new Map(), guarded: new Map() };
const messages = client.db("probe_batch").collection("messages");

for (let i = 0; i < batches + 1; i++) {
  for (const side of (i % 2 === 0 ? ["plain", "guarded"] : ["guarded", "plain"]) as Side[]) {
    commands.clear();
    const payload = body(side, i);
    const before = process.cpuUsage();
    const { id } = await postBatch(baseUrl, payload);
    // The confirmation's flush and the guard's events are written after the 200.
    await sleep(500);
    const used = process.cpuUsage(before);
    if (i === 1) {
      const marked = await messages.countDocuments({ batchId: id, risk: { $exists: true } });
      console.log(`${side}: ${marked} of the batch flagged by the guard`);
    }
    await messages.deleteMany({ batchId: id });
    if (i === 0) continue; // warm-up
    cpu[side].push((used.user + used.system) / 1000);
    for (const [key, n] of commands) counted[side].set(key, (counted[side].get(key) ?? 0) + n);
  }
}
for (const side of ["plain", "guarded"] as const) {
  console.log(
    `${side} (${accounts[side].apiKey.slice(0, 6)}…): CPU per batch ${cpu[side].map((c) => c.toFixed(0)).join(" ")} ms (median ${median(cpu[side]).toFixed(0)})`,
  );
  const rows = [...counted[side]].sort(([a], [b]) => a.localeCompare(b));
  for (const [key, n] of rows) console.log(`  ${key}: ${(n / batches).toFixed(1)} per batch`);
}
await service.app.close();
await client.close();
await database.stop();
