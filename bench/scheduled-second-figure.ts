// Figure 23 of issue 42 (run.ts's ids "23" and "scheduled"): a 10000-message batch scheduled for
// one second (POST /sms-batch with sendAt a few seconds ahead) is all handed to the carrier
// within the time the same batch sent at once takes, + 2 s: from sendAt to the last submit_sm in
// the test SMSC's PDU log, against the immediate batch's 200 to its last submit_sm; figure 11a's
// SMPP settings, alternated.

import type { MessageDoc } from "../src/store/documents.ts";
import { startSmsc } from "../test/support/smsc.ts";
import {
  type BenchContext,
  batchBody,
  batchMessagesIn,
  createAccount,
  PENDING_RECEIPT,
  postBatch,
  sleep,
} from "./common.ts";
import { median, type ServiceProcess, startProcess } from "./processes.ts";
import { submitTimes } from "./smpp-figure.ts";

export async function scheduledSecondFigure(ctx: BenchContext): Promise<void> {
  if (!ctx.runs("23", "scheduled")) return;
  const count = ctx.quick ? 3_000 : 10_000;
  ctx.log(`figure 23 (issue 42): ${count} messages scheduled for one second, against sent at once`);
  const dbName = "bench_scheduled_second";
  const binds = 4;
  const smsc = await startSmsc({
    config: { receiptDelayMs: 0, answerDelayMs: 0 },
    log: (line) => ctx.log(line),
  });
  let api: ServiceProcess | undefined;
  try {
    // Figure 11a's settings: no TPS limit, 4 binds of window 10, the SMSC answering at once.
    api = await startProcess(
      "src/main.ts",
      ctx.serviceEnv(dbName, {
        SMS_CARRIER: "smpp",
        SMS_SMPP_URL: smsc.url,
        SMS_SMPP_TPS: "0",
        SMS_SMPP_BINDS: String(binds),
        SMS_SMPP_WINDOW: "10",
      }),
    );
    const service = api;
    const account = await createAccount(service.baseUrl);
    for (let i = 0; i < 100 && (await smsc.binds()).length < binds; i++) await sleep(100);
    const messages = ctx.client.db(dbName).collection<MessageDoc>("messages");
    const body = JSON.parse(batchBody(account, count, "Figure 23")) as object;
    const leadMs = ctx.quick ? 4_000 : 6_000;

    /** One batch: ms from its start (its 200, or its sendAt) to the last submit_sm; early ones. */
    const run = async (mode: "now" | "scheduled") => {
      await smsc.reset();
      await ctx.collectDatabaseHeap();
      // A whole second, far enough ahead for the POST to be answered before it.
      const sendAt = Math.ceil((Date.now() + leadMs) / 1000) * 1000;
      const payload =
        mode === "scheduled" ? { ...body, sendAt: new Date(sendAt).toISOString() } : body;
      const { id, ms: postMs } = await postBatch(service.baseUrl, JSON.stringify(payload), count);
      const answeredAt = Date.now();
      const log = await submitTimes(smsc, count, leadMs + 120_000);
      // Its receipts applied before it goes: a receipt for a deleted message is kept and tried
      // again for 10 minutes (delivery/receipts.ts), work that would land in the next run.
      const final = Date.now() + 60_000;
      while (
        Date.now() < final &&
        (await batchMessagesIn(messages, id, { $in: PENDING_RECEIPT }, 1)) > 0
      )
        await sleep(200);
      await messages.deleteMany({ batchId: id });
      if (log.length < count)
        throw new Error(`figure 23: ${mode}: ${log.length} of ${count} parts reached the SMSC`);
      const times = log.map((e) => e.at).sort((a, b) => a - b);
      const start = mode === "scheduled" ? sendAt : answeredAt;
      return {
        ms: (times.at(-1) as number) - start,
        firstMs: (times[0] as number) - start,
        early: times.filter((t) => t < sendAt).length,
        answeredBeforeSendAt: answeredAt < sendAt,
        postMs,
      };
    };
    await run("now"); // warm-up: JITs of the service and the SMSC
    const rounds = ctx.quick ? 1 : 3;
    const spans: Record<"now" | "scheduled", number[]> = { now: [], scheduled: [] };
    let early = 0;
    let lateAnswers = 0;
    const posts: number[] = [];
    // When the first part left, after the start: tells a late start from a slow drain.
    const firsts: Record<"now" | "scheduled", number[]> = { now: [], scheduled: [] };
    for (let round = 0; round < rounds; round++) {
      const order =
        round % 2 === 0 ? (["now", "scheduled"] as const) : (["scheduled", "now"] as const);
      for (const mode of order) {
        const result = await run(mode);
        spans[mode].push(result.ms);
        firsts[mode].push(result.firstMs);
        if (mode === "now") posts.push(result.postMs);
        if (mode === "scheduled") {
          early += result.early;
          if (!result.answeredBeforeSendAt) lateAnswers++;
        }
      }
    }
    ctx.log(`figure 23: scheduled ${spans.scheduled.map((t) => t.toFixed(0)).join(" ")} ms`);
    ctx.log(`figure 23: at once ${spans.now.map((t) => t.toFixed(0)).join(" ")} ms`);
    const value = median(spans.scheduled);
    const base = median(spans.now);
    ctx.figures.push({
      figure: `23 (issue 42). ${count} messages scheduled for one second: sendAt -> last submit_sm at the test SMSC (${binds} binds, window 10; median of ${rounds})`,
      value,
      unit: "ms",
      baseline: base,
      baselineName: `the same batch sent at once, its 200 -> last submit_sm, alternated`,
      ratio: value / base,
      target: "<= at once + 2000 ms, none before sendAt",
      met: early === 0 && lateAnswers === 0 && value <= base + 2000,
      extra: {
        parts_before_sendAt: early,
        posts_answered_after_sendAt: lateAnswers,
        at_once_post_ms: median(posts),
        scheduled_first_submit_ms: median(firsts.scheduled),
        at_once_first_submit_ms: median(firsts.now),
      },
    });
  } finally {
    await api?.stop();
    await smsc.stop();
    await ctx.dropDatabases(dbName);
  }
}
