// Figure 14 of issue 26 (run.ts's id "mo"; issue 25's hostile bodies already hold the number 14):
// mobile-originated intake. The test SMSC (test/smsc, jsmpp) pushes MO over 2 binds to the
// service (`src/main.ts`, SMS_CARRIER=smpp), a quarter of them in 3 parts, each part answered
// only once stored:
//   a. MO stored and answered per second, first deliver_sm to last answer, beside figure 1's
//      POST /sms rate measured in the same run (both are one durable write per message):
//      target >= 0.8 x.
//   b. At half that rate, with the account's inbound URL on a receiver of the bench: deliver_sm ->
//      inbound webhook received per MO (its first part as the SMSC logged it, to the webhook's
//      first arrival): p99 <= 1 s. Beside it, deliver_sm -> answer (stored and handed to the
//      opt-out rules), first part sent to last part answered.

import autocannon from "autocannon";
import { inboundMessagesCollection } from "../src/store/inbound-messages.ts";
import { assignNumber } from "../src/store/numbers.ts";
import { startSmsc, type TestSmsc } from "../test/support/smsc.ts";
import { type BenchContext, createAccount, type Receiver, sleep, startReceiver } from "./common.ts";
import { percentile, startProcess } from "./processes.ts";

const NUMBER = "+4930555000";
const BINDS = 2;
/** Unanswered deliver_sm per bind: an SMSC's usual window. */
const WINDOW = 50;

/** POST /sms requests per second, 32 connections, as figure 1 measures them. */
async function postSmsRate(ctx: BenchContext, seconds: number): Promise<number> {
  const api = await startProcess(
    "src/main.ts",
    ctx.serviceEnv("bench_mo_api", { SMS_RUN_WORKERS: "false" }),
  );
  try {
    const account = await createAccount(api.baseUrl);
    const load = () =>
      autocannon({
        url: `${api.baseUrl}/sms`,
        method: "POST",
        connections: 32,
        duration: seconds,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          to: "+4915112345678",
          text: "Hello from the benchmark",
          ...account,
        }),
      });
    await load(); // warm-up
    const result = await load();
    ctx.log(
      `figure 14 (issue 26): POST /sms ${result.requests.average} req/s, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors}`,
    );
    // Only accepted sends count.
    return (result.requests.total - result.non2xx) / seconds;
  } finally {
    await api.stop();
    await ctx.dropDatabases("bench_mo_api");
  }
}

export async function moIntakeFigure(ctx: BenchContext): Promise<void> {
  if (!ctx.runs("mo")) return;
  ctx.log("figure 14 (issue 26): MO intake over SMPP");
  const count = ctx.quick ? 4_000 : 20_000;
  const postSms = await postSmsRate(ctx, ctx.quick ? 3 : 10);
  const dbName = "bench_mo";
  const smsc = await startSmsc();
  const receiver = await startReceiver();
  const service = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, {
      SMS_CARRIER: "smpp",
      SMS_SMPP_URL: smsc.url,
      SMS_SMPP_BINDS: String(BINDS),
    }),
  );
  try {
    const account = await createAccount(service.baseUrl);
    await assignNumber(ctx.client.db(dbName), account.apiKey, NUMBER);
    for (let i = 0; i < 100 && (await smsc.binds()).length < BINDS; i++) await sleep(100);
    const inbound = inboundMessagesCollection(ctx.client.db(dbName));
    // Warm-up (JIT, connection pool, id blocks), other handsets than the measured ones.
    await smsc.moBulk({ to: NUMBER, count: 1_000, window: WINDOW, fromBase: 491700000000 });
    const before = await inbound.countDocuments();
    const full = await smsc.moBulk({ to: NUMBER, count, window: WINDOW, fromBase: 491510000000 });
    const stored = (await inbound.countDocuments()) - before;
    ctx.log(`figure 14 (issue 26): ${JSON.stringify(full)}; stored ${stored}`);

    const half = full.moPerSecond / 2;
    const pacedCount = Math.round(half * (ctx.quick ? 5 : 10));
    // From now on the account's inbound messages are POSTed to the receiver.
    await ctx.client
      .db(dbName)
      .collection<{ _id: string }>("accounts")
      .updateOne({ _id: account.apiKey }, { $set: { inboundUrl: receiver.url("/inbound") } });
    await smsc.reset(); // its PDU log: the paced run's deliver_sm only
    const paced = await smsc.moBulk({
      to: NUMBER,
      count: pacedCount,
      window: WINDOW,
      perSecond: half,
      fromBase: 491520000000,
    });
    ctx.log(`figure 14 (issue 26) at half rate: ${JSON.stringify(paced)}`);
    const webhooks = await webhookDelays(ctx, dbName, smsc, receiver, pacedCount);
    ctx.log(`figure 14 (issue 26) deliver_sm -> inbound webhook: ${JSON.stringify(webhooks)}`);
    const allStored = full.complete && full.statuses["0"] === full.parts && stored === count;
    ctx.figures.push({
      figure: `14 (issue 26). MO intake: ${count} MO (1 in 4 of 3 parts) from the test SMSC over ${BINDS} binds (window ${WINDOW} each), stored and answered per second`,
      value: full.moPerSecond,
      unit: "MO/s",
      baseline: postSms,
      baselineName: "POST /sms req/s (figure 1's load, same run)",
      ratio: full.moPerSecond / postSms,
      target: ">= 0.8 x POST /sms; every MO stored once",
      met: allStored && full.moPerSecond >= 0.8 * postSms,
      extra: {
        parts_per_s: full.parts / full.seconds,
        stored,
        part_p50_ms: full.partMs.p50 ?? Number.NaN,
        part_p99_ms: full.partMs.p99 ?? Number.NaN,
      },
    });
    ctx.figures.push({
      figure: `14b (issue 26). MO at half that rate (${half.toFixed(0)} MO/s, ${pacedCount} MO): deliver_sm -> inbound webhook received per MO, p99`,
      value: webhooks.p99,
      unit: "ms",
      target: "<= 1000 ms; every MO's webhook received",
      met:
        paced.complete &&
        paced.statuses["0"] === paced.parts &&
        webhooks.received === pacedCount &&
        webhooks.p99 <= 1000,
      extra: {
        p50_ms: webhooks.p50,
        max_ms: webhooks.max,
        webhooks_received: webhooks.received,
        answered_p50_ms: paced.moMs.p50 ?? Number.NaN,
        answered_p99_ms: paced.moMs.p99 ?? Number.NaN,
        achieved_mo_per_s: paced.moPerSecond,
      },
    });
  } finally {
    await service.stop();
    await smsc.stop();
    receiver.close();
    await ctx.dropDatabases(dbName);
  }
}

/**
 * Waits (at most 30 s) for the inbound webhooks of the paced run's `count` MO; answers how many
 * came and, per MO, its first deliver_sm (the SMSC's log) to its webhook's first arrival.
 */
async function webhookDelays(
  ctx: BenchContext,
  dbName: string,
  smsc: TestSmsc,
  receiver: Receiver,
  count: number,
) {
  const arrived = () => [...receiver.first.keys()].filter((k) => k.startsWith("inbound_")).length;
  for (let waited = 0; arrived() < count && waited < 30_000; waited += 200) await sleep(200);
  const sent = new Map<string, number>();
  for (const pdu of await smsc.pdus({ command: "deliver_sm" })) {
    const from = `+${pdu.source_addr}`;
    if (!sent.has(from)) sent.set(from, pdu.at);
  }
  const messages = await inboundMessagesCollection(ctx.client.db(dbName))
    .find({ from: { $in: [...sent.keys()] } }, { projection: { _id: 1, from: 1 } })
    .toArray();
  const delays: number[] = [];
  for (const message of messages) {
    const at = receiver.first.get(`inbound_${message._id}`);
    const start = sent.get(message.from);
    if (at !== undefined && start !== undefined) delays.push(at - start);
  }
  delays.sort((a, b) => a - b);
  return {
    received: delays.length,
    p50: percentile(delays, 50),
    p99: delays.length === count ? percentile(delays, 99) : Number.POSITIVE_INFINITY,
    max: delays.at(-1) ?? Number.NaN,
  };
}
