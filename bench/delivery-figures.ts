// Figures 6 and 7 (issue 9): one probe send every 100 ms while a 10000-message batch drains through
// a carrier sold at 500 parts/s (SMS_SIM_TPS, default simulator delays), each beside the same
// probe's latency on the same service with the batch's account idle.
//   6. Fairness: the probe is account B's POST /sms; the batch is account A's.
//   7. OTP priority: the probe is the batch's own account, sending from its approved OTP sender
//      name; the batch is sent from the shared sender. Both notify the account's one status URL.
// Value: the probe's p99 from its accept (the 200 of its POST, in this process) to its DELIVERED
// webhook's arrival (in this process). Target: loaded p99 <= 2 x quiet p99 + 0.5 s.
// Figure 6b (issue 25) is in own-batches-figure.ts.

import type { MessageDoc } from "../src/store/documents.ts";
import {
  approvedOtpSender,
  type BenchContext,
  batchBody,
  batchMessagesIn,
  changeTimes,
  createAccount,
  pacedSends,
  postBatch,
  type Receiver,
  type Send,
  sleep,
  startReceiver,
  waitUntil,
} from "./common.ts";
import { ownBatchesFigure } from "./own-batches-figure.ts";
import { percentile, startProcess } from "./processes.ts";

const CARRIER_TPS = 500;
const PROBE_INTERVAL_MS = 100;
const OTP_SENDER = "BENCHOTP";

/**
 * Accept -> DELIVERED webhook of each send; a webhook still missing after `waitMs` counts as the
 * wait (a lower bound). Beside it, from the database, accept -> the SENT and the DELIVERED status
 * changes, which tell the delivery queue's share of the latency from the notifier's.
 */
async function deliveredLatencies(
  ctx: BenchContext,
  dbName: string,
  receiver: Receiver,
  sends: Send[],
  waitMs: number,
) {
  const keys = sends.map((s) => `${s.id}:DELIVERED`);
  await waitUntil(() => keys.every((key) => receiver.first.has(key)), waitMs);
  const end = Date.now();
  const changes = await changeTimes(ctx.client, dbName, { _id: { $in: sends.map((s) => s.id) } });
  let missing = 0;
  const sorted = (values: number[]) => values.sort((a, b) => a - b);
  const webhook = sorted(
    sends.map((send, i) => {
      const at = receiver.first.get(keys[i] ?? "");
      if (at === undefined) missing++;
      return (at ?? end) - send.acceptedAt;
    }),
  );
  const change = (status: string) =>
    sorted(sends.map((send) => (changes.get(`${send.id}:${status}`) ?? end) - send.acceptedAt));
  return {
    sends: sends.length,
    missing,
    p50: percentile(webhook, 50),
    p99: percentile(webhook, 99),
    max: webhook.at(-1) ?? Number.NaN,
    sentP99: percentile(change("SENT"), 99),
    deliveredChangeP99: percentile(change("DELIVERED"), 99),
  };
}

async function carrierLimitedFigure(ctx: BenchContext, kind: "fairness" | "otp") {
  const batchSize = ctx.quick ? 2_500 : 10_000;
  const quietMs = ctx.quick ? 5_000 : 20_000;
  // The drain takes batchSize / CARRIER_TPS seconds when the carrier is the bottleneck.
  const maxDrainMs = 3 * (batchSize / CARRIER_TPS) * 1000 + 30_000;
  const dbName = `bench_${kind}`;
  const receiver = await startReceiver();
  const service = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, {
      SMS_SIM_TPS: String(CARRIER_TPS),
      SMS_WEBHOOK_ALLOW_PRIVATE: "true",
    }),
  );
  try {
    const base = service.baseUrl;
    const batchAccount = await createAccount(base, receiver.url("/a"), "bench-a");
    const probe =
      kind === "fairness"
        ? {
            ...(await createAccount(base, receiver.url("/b"), "bench-b")),
            to: "+4915123456789",
            text: "Single send of account B",
          }
        : { ...batchAccount, from: OTP_SENDER, to: "+4915123456789", text: "Your code is 123456" };
    if (kind === "otp") await approvedOtpSender(base, batchAccount, OTP_SENDER);

    // Warm-up (JIT, connections), then the quiet baseline: the batch's account idle.
    const never = () => false;
    const warm = await pacedSends(base, probe, PROBE_INTERVAL_MS, never, 1_000);
    await deliveredLatencies(ctx, dbName, receiver, warm, 30_000);
    const quietSends = await pacedSends(base, probe, PROBE_INTERVAL_MS, never, quietMs);
    const quiet = await deliveredLatencies(ctx, dbName, receiver, quietSends, 60_000);
    ctx.log(
      `figure ${kind === "fairness" ? 6 : 7}: quiet p99 ${quiet.p99} ms over ${quiet.sends} sends`,
    );

    // Loaded: the batch, then the probe until none of the batch's messages is left ACCEPTED.
    const body = batchBody(batchAccount, batchSize, "Batch message of the benchmark");
    const batch = await postBatch(base, body, batchSize);
    const batchAcceptedAt = Date.now();
    const messages = ctx.client.db(dbName).collection<MessageDoc>("messages");
    let drained = false;
    let probing = true;
    const drainPoll = (async () => {
      while (probing && !drained) {
        await sleep(500);
        drained = (await batchMessagesIn(messages, batch.id, "ACCEPTED", 1)) === 0;
      }
    })();
    const loadedSends = await pacedSends(
      base,
      probe,
      PROBE_INTERVAL_MS,
      () => drained,
      maxDrainMs,
    ).finally(() => {
      probing = false;
    });
    await drainPoll;
    const loaded = await deliveredLatencies(ctx, dbName, receiver, loadedSends, 90_000);
    ctx.log(
      `figure ${kind === "fairness" ? 6 : 7}: loaded p99 ${loaded.p99} ms over ${loaded.sends} sends`,
    );

    // The drain, from the database: the batch's last SENT status change after its accept.
    const changes = await changeTimes(ctx.client, dbName, { batchId: batch.id });
    const sentTimes = [...changes].filter(([key]) => key.endsWith(":SENT")).map(([, at]) => at);
    const lastSent = sentTimes.reduce((a, b) => Math.max(a, b), 0);
    const drainSeconds =
      sentTimes.length === batchSize ? (lastSent - batchAcceptedAt) / 1000 : Number.NaN;

    if (batchSize / drainSeconds > 1.2 * CARRIER_TPS)
      ctx.log(
        `figure ${kind}: the batch drained at ${(batchSize / drainSeconds).toFixed(0)} parts/s: SMS_SIM_TPS=${CARRIER_TPS} is not in effect`,
      );
    const who =
      kind === "fairness"
        ? `6. Fairness: account B's POST /sms every ${PROBE_INTERVAL_MS} ms while account A's batch`
        : `7. OTP priority: an account's OTP-sender POST /sms every ${PROBE_INTERVAL_MS} ms while its own batch`;
    ctx.figures.push({
      figure: `${who} of ${batchSize} drains at ${CARRIER_TPS} parts/s, p99 accept->DELIVERED webhook`,
      value: loaded.p99,
      unit: "ms",
      baseline: quiet.p99,
      baselineName: "the same sends' p99, batch account idle",
      ratio: loaded.p99 / quiet.p99,
      target: "<= 2 x quiet p99 + 0.5 s",
      met:
        loaded.missing === 0 && quiet.missing === 0 && drained && loaded.p99 <= 2 * quiet.p99 + 500,
      extra: {
        sends: loaded.sends,
        missing: loaded.missing,
        p50_ms: loaded.p50,
        max_ms: loaded.max,
        sent_change_p99_ms: loaded.sentP99,
        delivered_change_p99_ms: loaded.deliveredChangeP99,
        quiet_sends: quiet.sends,
        quiet_missing: quiet.missing,
        quiet_p50_ms: quiet.p50,
        quiet_max_ms: quiet.max,
        quiet_sent_change_p99_ms: quiet.sentP99,
        batch_post_ms: batch.ms,
        batch_sent: sentTimes.length,
        drain_s: drainSeconds,
        batch_parts_per_s: batchSize / drainSeconds,
      },
    });
  } finally {
    await service.stop();
    receiver.close();
  }
  await ctx.dropDatabases(dbName);
}

export async function deliveryFigures(ctx: BenchContext) {
  if (ctx.runs("6")) {
    ctx.log(`figure 6: fairness under a carrier limited to ${CARRIER_TPS} parts/s`);
    await carrierLimitedFigure(ctx, "fairness");
  }
  if (ctx.runs("6", "6b")) {
    ctx.log("figure 6b: an account's small batch beside its own 10000-message batch");
    await ownBatchesFigure(ctx);
  }
  if (ctx.runs("7")) {
    ctx.log(`figure 7: OTP priority under a carrier limited to ${CARRIER_TPS} parts/s`);
    await carrierLimitedFigure(ctx, "otp");
  }
}
