// Status webhooks of `count` messages through the simulator with zero delays (figures 4 and 10):
// "burst" sends them as one batch (all ACCEPTED at the same instant: the throughput figure);
// "steady" sends them one POST /sms at a time, paced by autocannon over 64 connections (each waits
// for its answer), for the latency figure: a p99 of change -> receipt is a property of a load the
// service keeps up with, not of a queue 15 s long (see docs/benchmarks.md).

import autocannon from "autocannon";
import {
  type BenchContext,
  batchBody,
  changeTimes,
  createAccount,
  postBatch,
  sleep,
  startReceiver,
} from "./common.ts";
import { percentile, startProcess } from "./processes.ts";

export interface WebhookRunOptions {
  mode: "burst" | "steady";
  count: number;
  /** Offered POST /sms per second in "steady" mode. */
  sendsPerSecond?: number;
  dbName: string;
  /** Another checkout to run the service from (figure 10's baseline commit). */
  cwd?: string;
}

export async function webhookRun(ctx: BenchContext, options: WebhookRunOptions) {
  const { mode, count, dbName } = options;
  const receiver = await startReceiver();
  const received = receiver.arrivals;
  const full = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, {
      SMS_SIM_SEND_DELAY_MS: "0",
      SMS_SIM_RECEIPT_DELAY_MS: "0",
      SMS_WEBHOOK_ALLOW_PRIVATE: "true",
    }),
    "/health",
    options.cwd,
  );
  const account = await createAccount(full.baseUrl, receiver.url("/hook"));
  const started = Date.now();
  let sendsPerSecond: number | undefined;
  if (mode === "burst") {
    await postBatch(full.baseUrl, batchBody(account, count, "Webhook benchmark"), count);
  } else {
    const sends = await autocannon({
      url: `${full.baseUrl}/sms`,
      method: "POST",
      connections: 64,
      overallRate: options.sendsPerSecond ?? 800,
      amount: count,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ to: "+4915112345678", text: "Webhook benchmark", ...account }),
    });
    if (sends["2xx"] !== count)
      throw new Error(`steady sends: ${sends["2xx"]} of ${count} accepted`);
    ctx.log(`steady sends: ${count} accepted, p99 ${sends.latency.p99} ms`);
  }
  const expected = 3 * count;
  const deadline = Date.now() + (ctx.quick ? 60_000 : 180_000);
  while (received.length < expected && Date.now() < deadline) await sleep(50);
  const elapsed = ((received.at(-1)?.at ?? Date.now()) - started) / 1000;
  // Latency from the status change (the notification's creation, in the same update) to receipt.
  const changes = await changeTimes(ctx.client, dbName);
  if (mode === "steady") {
    // The rate the sends were accepted at, from the messages' own ACCEPTED times.
    const accepted = [...changes].filter(([key]) => key.endsWith(":ACCEPTED")).map(([, at]) => at);
    const spread = (Math.max(...accepted) - Math.min(...accepted)) / 1000;
    sendsPerSecond = (count - 1) / spread;
  }
  const delays = received.map((r) => r.at - (changes.get(r.key) ?? r.at)).sort((a, b) => a - b);
  if (process.env.BENCH_TRACE) {
    const perSecond = new Map<number, Record<string, number>>();
    for (const r of received) {
      const second = Math.floor((r.at - started) / 1000);
      const status = r.key.split(":")[1] ?? "";
      const row = perSecond.get(second) ?? {};
      row[status] = (row[status] ?? 0) + 1;
      perSecond.set(second, row);
    }
    for (const [second, row] of perSecond) ctx.log(`${mode} t=${second}s ${JSON.stringify(row)}`);
  }
  await full.stop();
  receiver.close();
  await ctx.dropDatabases(dbName);
  return {
    rate: received.length / elapsed,
    complete: received.length >= expected,
    extra: {
      received: received.length,
      expected,
      seconds: elapsed,
      p50_ms: percentile(delays, 50),
      p99_ms: percentile(delays, 99),
      ...(sendsPerSecond !== undefined && { sends_per_s: sendsPerSecond }),
    },
  };
}
