// Figure 15 of issue 26 (run.ts's id "optout"): what an opt-out list costs the sends that are
// checked against it. One service, two accounts: "listed" with 100000 numbers on its opt-out list
// (written as CreateOptOut writes them), "plain" with none. Every send is to a number not on the
// list, so every one is accepted and checked.
//   a. Figure 1's load (POST /sms, 1 part, 32 connections) on each account, alternated: the
//      listed account's rate >= 0.95 x the plain account's, same run.
//   b. Figure 2 (a 10000-message batch, time to 200) from the listed account, beside insertMany
//      of the same documents, alternated: <= 1.5 x.

import { openOptOuts, optOutId, optOutKey } from "../src/opt-outs/list.ts";
import { openStore } from "../src/store/database.ts";
import type { MessageDoc } from "../src/store/documents.ts";
import { ensureIndexes } from "../src/store/indexes.ts";
import {
  alternated,
  type BenchContext,
  batchBody,
  createAccount,
  postBatch,
  sendRate,
  storedCopies,
} from "./common.ts";
import { median, startProcess } from "./processes.ts";

const LIST_SIZE = 100_000;
const BATCH = 10_000;

export async function optOutFigure(ctx: BenchContext): Promise<void> {
  if (!ctx.runs("optout", "15")) return;
  ctx.log("figure 15 (issue 26): sends checked against a 100000-number opt-out list");
  const dbName = "bench_opt_out";
  const api = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, { SMS_RUN_WORKERS: "false" }),
  );
  try {
    const plain = await createAccount(api.baseUrl, undefined, "plain");
    const listed = await createAccount(api.baseUrl, undefined, "listed");
    const { optOuts } = openOptOuts(ctx.client.db(dbName));
    const now = new Date();
    for (let start = 0; start < LIST_SIZE; start += 10_000) {
      await optOuts.insertMany(
        Array.from({ length: 10_000 }, (_, i) => {
          const key = optOutKey(listed.apiKey, `+4917${String(10_000_000 + start + i)}`);
          return { _id: optOutId(key), ...key, source: "API" as const, createTime: now };
        }),
        { ordered: false },
      );
    }

    // a. Alternated rounds, so both accounts meet the same database and JIT state; five each, as
    // figure 13's: single rounds on this machine vary by up to 1.9x, and three let one slow round
    // move the median by as much as the 5 % the figure allows.
    const seconds = ctx.quick ? 3 : 10;
    const rounds = ctx.quick ? 2 : 5;
    await sendRate(api.baseUrl, plain, seconds, "15"); // warm-up
    await sendRate(api.baseUrl, listed, seconds, "15");
    const plainRates: number[] = [];
    const listedRates: number[] = [];
    // Each side from a collected emulator heap, as figure 2's.
    const accounts = { plain, listed };
    const rate = async (side: keyof typeof accounts) => {
      await ctx.collectDatabaseHeap();
      return sendRate(api.baseUrl, accounts[side], seconds, "15");
    };
    await alternated(rounds, ["plain", "listed"], rate, {
      plain: plainRates,
      listed: listedRates,
    });
    ctx.log(`figure 15a: plain ${plainRates.map((r) => r.toFixed(0)).join(" ")} req/s`);
    ctx.log(`figure 15a: listed ${listedRates.map((r) => r.toFixed(0)).join(" ")} req/s`);
    const listedRate = median(listedRates);
    const plainRate = median(plainRates);
    ctx.figures.push({
      figure: `15a (issue 26). POST /sms requests/s with ${LIST_SIZE} numbers on the account's opt-out list (every send checked, none refused)`,
      value: listedRate,
      unit: "req/s",
      baseline: plainRate,
      baselineName: "same run, an account without a list",
      ratio: listedRate / plainRate,
      target: ">= 0.95 x without the list",
      met: listedRate >= 0.95 * plainRate,
    });

    // b. The batch against its insertMany, alternated like figure 2.
    const text = "Your code is 123456. It expires in 10 minutes.";
    const body = batchBody(listed, BATCH, text);
    const baseline = ctx.client.db("bench_opt_out_insert");
    await ensureIndexes(openStore(baseline));
    const baselineMessages = baseline.collection<MessageDoc>("messages");
    const serviceMessages = ctx.client.db(dbName).collection<MessageDoc>("messages");
    // The baseline stores copies of what the service stored for the same body (bench/common.ts).
    let copies: ((firstId: number) => MessageDoc[]) | undefined;
    const insertMany = async (round: number) => {
      const docs = copies?.(1 + round * BATCH) ?? [];
      const started = performance.now();
      await baselineMessages.insertMany(docs, { ordered: false });
      return performance.now() - started;
    };
    const warmUps = ctx.quick ? 1 : 3;
    const repeats = ctx.quick ? 3 : 7;
    const storeTimes: number[] = [];
    const insertTimes: number[] = [];
    let batchId = 0;
    for (let i = 0; i < warmUps + repeats; i++) {
      if (batchId) await serviceMessages.deleteMany({ batchId });
      await baselineMessages.deleteMany({});
      // Each side from a collected emulator heap, as in figure 2.
      await ctx.collectDatabaseHeap();
      const { ms, id } = await postBatch(api.baseUrl, body);
      batchId = id;
      copies ??= await storedCopies(serviceMessages, id);
      await ctx.collectDatabaseHeap();
      const baselineMs = await insertMany(i);
      if (i < warmUps) continue;
      storeTimes.push(ms);
      insertTimes.push(baselineMs);
    }
    ctx.log(`figure 15b: service ${storeTimes.map((t) => t.toFixed(0)).join(" ")} ms`);
    ctx.log(`figure 15b: insertMany ${insertTimes.map((t) => t.toFixed(0)).join(" ")} ms`);
    const value = median(storeTimes);
    const base = median(insertTimes);
    ctx.figures.push({
      figure: `15b (issue 26). POST /sms-batch, ${BATCH} messages, time to 200, with ${LIST_SIZE} numbers on the account's opt-out list`,
      value,
      unit: "ms",
      baseline: base,
      baselineName: `driver insertMany of ${BATCH}`,
      ratio: value / base,
      target: "<= 1.5 x insertMany",
      met: value <= 1.5 * base,
    });
  } finally {
    await api.stop();
    await ctx.dropDatabases(dbName, "bench_opt_out_insert");
  }
}
