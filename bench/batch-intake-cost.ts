// What a 10000-message batch's own work per message costs the service's CPU, without a database or
// HTTP: each message checked, priced, held to the spend controls, counted by the toll-fraud guard
// and built into its document, as send-batch.ts does, for the account of figure 2c ("guarded":
// every control, the guard on, each batch to 10000 numbers new to it, 9800 flagged) and for one
// with neither ("plain"). Production builds of several checkouts (`--dirs a,b`, each built with
// `npm run build` first unless `--no-build`) are measured in turn, each side of each in its own
// process, the order rotating every round; CPU time (user + system) per batch, median.
//
//   npx tsx bench/batch-intake-cost.ts --dirs /tmp/before,. --rounds 3 --batches 40

import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { optionValue } from "./common.ts";
import { buildService, median } from "./processes.ts";

type Side = "plain" | "guarded";
const SIZE = 10_000;

if (process.argv[2] === "--inner") await inner(process.argv[3] as string, process.argv[4] as Side);
else await outer();

async function outer() {
  const dirs = optionValue("dirs", ".").split(",");
  const rounds = Number(optionValue("rounds", "3"));
  const batches = optionValue("batches", "40");
  if (!process.argv.includes("--no-build")) for (const dir of dirs) await buildService(dir);
  const results = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++) {
    const order = dirs.flatMap((dir) =>
      (["plain", "guarded"] as Side[]).map((side) => ({ dir, side })),
    );
    for (let k = 0; k < order.length; k++) {
      const { dir, side } = order[(k + round) % order.length] as { dir: string; side: Side };
      const { stdout } = await promisify(execFile)(process.execPath, [
        ...process.execArgv,
        process.argv[1] as string,
        "--inner",
        resolve(dir),
        side,
        batches,
      ]);
      const key = `${dir} ${side}`;
      results.set(key, [...(results.get(key) ?? []), Number(stdout.trim())]);
    }
  }
  for (const [key, values] of results) {
    console.log(
      `${key}: ${values.map((v) => v.toFixed(1)).join(" ")} ms a batch (median ${median(values).toFixed(1)})`,
    );
  }
}

async function inner(dir: string, side: Side) {
  const batches = Number(process.argv[5] ?? "40");
  const from = (path: string) => import(`${dir}/dist/src/${path}.js`);
  const { loadConfig } = await from("config/config");
  const { Routing } = await from("delivery/routing/routing");
  const { checkMessage } = await from("services/message-intake");
  const { spendCheck } = await from("money/spend-controls");
  const { TollFraudGuard } = await from("money/toll-fraud-guard");
  const { acceptedDocument } = await from("services/message-documents");
  // Builds before SharedValues have none: their documents are built without.
  const { SharedValues } = await from("store/messages");
  const config = loadConfig({ SMS_ADMIN_TOKEN: "x".repeat(32) });
  const policy = {
    sharedSender: config.sharedSender,
    maxParts: config.maxParts,
    routing: new Routing(config.carriers, config.numberValidation),
  };
  const account = {
    apiKey: "bench",
    approvedSenders: new Set(),
    numbers: new Set(),
    otpSenders: new Set(),
  };
  const controls = {
    allowedCountries: ["DE", "FR", "GB"],
    maxPricePerMessageMicros: 100_000_000,
    dailySpendLimitMicros: 1e14,
  };
  const guard = new TollFraudGuard();
  const text = "Your code is 123456. It expires in 10 minutes.";
  const times: number[] = [];
  for (let b = 0; b < batches; b++) {
    const numbers = Array.from({ length: SIZE }, (_, i) => `+49151${10_000_000 + b * SIZE + i}`);
    const started = process.cpuUsage();
    const refusalOf = side === "guarded" ? spendCheck(controls) : undefined;
    const check = side === "guarded" ? guard.checker("bench") : undefined;
    const now = new Date();
    const shared = SharedValues ? new SharedValues() : undefined;
    const docs = [];
    for (const [i, to] of numbers.entries()) {
      const checked = checkMessage({ to, from: undefined, text }, account, policy);
      if ("errors" in checked) throw new Error(`${to}: ${JSON.stringify(checked.errors)}`);
      const { destination, partCount } = checked.message;
      if (refusalOf?.(destination.country, partCount * destination.pricePerPartMicros))
        throw new Error(`${to} refused by the controls`);
      const verdict = check?.(checked.message.to) ?? "ok";
      const fields = {
        id: 1 + b * SIZE + i,
        batchId: 1 + b,
        ttl: 21_600,
        statusCallback: undefined,
        traceContext: undefined,
      };
      const doc = acceptedDocument(checked.message, account, policy, fields, now, shared);
      if (verdict === "flagged") doc.risk = "prefix_burst";
      docs.push(doc);
    }
    const used = process.cpuUsage(started);
    if (docs.length !== SIZE) throw new Error("a message went missing");
    times.push((used.user + used.system) / 1000);
  }
  // The first batches warm the JIT up.
  process.stdout.write(String(median(times.slice(Math.min(5, times.length - 1)))));
}
