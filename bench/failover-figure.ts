// Figure 16 of issue 27 (run.ts's id "16" or "failover"): failover between carriers. One batch
// of 10000 one-part messages on the route [alpha, beta], each carrier an SMPP carrier of the
// carriers file bound to its own test SMSC (answering after 50 ms, receipts at once). Once alpha's
// SMSC has read 3000 submit_sm it is SIGKILLed. Targets, each read where it happens:
//   - every message DELIVERED (the messages collection);
//   - parts submitted to both <= alpha's window (binds x window): the destinations both SMSCs
//     read a submit_sm for, from each SMSC's PDU file (the killed one's memory dies with it);
//   - beta's first submit_sm (its PDU file) within failover.afterSeconds + 2 s of the kill.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MessageDoc } from "../src/store/documents.ts";
import { carriersFile } from "../test/support/carriers-file.ts";
import { startSmsc, type TestSmsc } from "../test/support/smsc.ts";
import { readPduFile } from "../test/support/smsc-pdus.ts";
import { type BenchContext, batchBody, createAccount, postBatch, sleep } from "./common.ts";
import { acceptedDestinations, isSubmit, PduTail } from "./pdu-tail.ts";
import { startProcess } from "./processes.ts";

const MESSAGES = 10_000;
const KILL_AFTER = 3_000;
// Alpha's window: one bind of 10 unacknowledged submit_sm (the carriers' defaults).
const BINDS = 1;
const WINDOW = 10;
// The design's default, written out so the figure names what it measures against.
const AFTER_SECONDS = 15;
const FINAL = ["DELIVERED", "DELIVERY_ERROR", "SEND_ERROR"];

/** Status counts of the figure's messages, until all are final or nothing changed for `quietMs`. */
async function settle(ctx: BenchContext, dbName: string, quietMs: number, maxMs: number) {
  const messages = ctx.client.db(dbName).collection<MessageDoc>("messages");
  const deadline = Date.now() + maxMs;
  let last = "";
  let changedAt = Date.now();
  for (;;) {
    const counts = Object.fromEntries(
      (
        await messages
          .aggregate<{ _id: string; n: number }>([{ $group: { _id: "$status", n: { $sum: 1 } } }])
          .toArray()
      ).map((g) => [g._id, g.n]),
    ) as Record<string, number>;
    const final = FINAL.reduce((sum, s) => sum + (counts[s] ?? 0), 0);
    const key = JSON.stringify(counts);
    if (key !== last) {
      last = key;
      changedAt = Date.now();
      ctx.log(`figure 16: ${key}`);
    }
    if (final >= MESSAGES || Date.now() - changedAt > quietMs || Date.now() > deadline)
      return counts;
    await sleep(1000);
  }
}

export async function failoverFigure(ctx: BenchContext): Promise<void> {
  if (!ctx.runs("16", "failover")) return;
  ctx.log(`figure 16 (issue 27): failover, alpha's SMSC killed after ${KILL_AFTER} submit_sm`);
  const dir = mkdtempSync(join(tmpdir(), "bench-failover-"));
  const files = { alpha: join(dir, "alpha.jsonl"), beta: join(dir, "beta.jsonl") };
  // Each submit_sm answered after 50 ms, as SMSCs answer in tens of ms: alpha's window then holds
  // parts when the kill comes (answered at once, it was empty at the kill of the first run).
  const config = { receiptDelayMs: 0, answerDelayMs: 50 };
  const dbName = "bench_failover";
  let alpha: TestSmsc | undefined;
  let beta: TestSmsc | undefined;
  let service: Awaited<ReturnType<typeof startProcess>> | undefined;
  try {
    alpha = await startSmsc({ config, pduFile: files.alpha, log: ctx.log });
    beta = await startSmsc({ config, pduFile: files.beta, log: ctx.log });
    const carrier = (name: string, smsc: TestSmsc) =>
      `  - { name: ${name}, url: "${smsc.url}", binds: ${BINDS}, window: ${WINDOW}, tps: 0 }`;
    const file = carriersFile([
      "carriers:",
      carrier("alpha", alpha),
      carrier("beta", beta),
      "routes:",
      "  - { name: default, carriers: [alpha, beta] }",
      `failover: { afterSeconds: ${AFTER_SECONDS} }`,
    ]);
    service = await startProcess(
      "src/main.ts",
      ctx.serviceEnv(dbName, { SMS_CARRIERS_FILE: file }),
    );
    const account = await createAccount(service.baseUrl);
    for (let i = 0; i < 200; i++) {
      if ((await alpha.binds()).length >= BINDS && (await beta.binds()).length >= BINDS) break;
      await sleep(100);
    }

    const started = Date.now();
    await postBatch(service.baseUrl, batchBody(account, MESSAGES, "Figure 16"), MESSAGES);
    // Alpha's submit_sm counted from its file as they are written; killed at the count.
    const tail = new PduTail(files.alpha);
    let submits = 0;
    const killDeadline = Date.now() + 600_000;
    while (submits < KILL_AFTER) {
      if (Date.now() > killDeadline) throw new Error(`alpha read only ${submits} submit_sm`);
      submits += tail.read().filter(isSubmit).length;
      if (submits < KILL_AFTER) await sleep(5);
    }
    const killedAt = Date.now();
    await alpha.kill();
    ctx.log(`figure 16: alpha killed at ${submits} submit_sm seen`);

    const counts = await settle(ctx, dbName, 60_000, 900_000);
    const seconds = (Date.now() - started) / 1000;
    const alphaLog = readPduFile(files.alpha);
    const betaLog = readPduFile(files.beta);
    const toAlpha = new Set(alphaLog.filter(isSubmit).map((p) => p.destination_addr));
    const toBeta = new Set(betaLog.filter(isSubmit).map((p) => p.destination_addr));
    const acceptedByAlpha = acceptedDestinations(alphaLog);
    const both = [...toAlpha].filter((to) => toBeta.has(to));
    const acceptedBoth = both.filter((to) => acceptedByAlpha.has(to as string));
    const betaFirst = betaLog.find(isSubmit)?.at;
    const failoverSeconds =
      betaFirst === undefined ? Number.POSITIVE_INFINITY : (betaFirst - killedAt) / 1000;

    // Messages left undelivered: those alpha accepted whose receipt it never wrote died with it.
    const receiptsByAlpha = new Set(
      alphaLog
        .filter((p) => p.command === "deliver_sm" && p.dir === "out")
        .map((p) => p.source_addr),
    );
    const undelivered = await ctx.client
      .db(dbName)
      .collection<MessageDoc>("messages")
      .find({ status: { $ne: "DELIVERED" } }, { projection: { to: 1, status: 1, carrier: 1 } })
      .toArray();
    const receiptLostWithAlpha = undelivered.filter((m) => {
      const to = m.to.replace(/^\+/, "");
      return m.carrier === "alpha" && acceptedByAlpha.has(to) && !receiptsByAlpha.has(to);
    }).length;
    const delivered = counts.DELIVERED ?? 0;
    const window = BINDS * WINDOW;
    const limit = AFTER_SECONDS + 2;
    ctx.log(
      `figure 16: delivered ${delivered}/${MESSAGES}, submitted to both ${both.length} (alpha's window ${window}), beta's first submit_sm ${failoverSeconds.toFixed(2)} s after the kill (limit ${limit})`,
    );
    ctx.figures.push({
      figure: `16 (issue 27). Failover: ${MESSAGES} messages on [alpha, beta], alpha's SMSC killed at ${KILL_AFTER} submit_sm: messages DELIVERED`,
      value: delivered,
      unit: `of ${MESSAGES}`,
      target: `all DELIVERED, submitted to both <= ${window} (alpha's window), beta's first submission <= ${limit} s after the kill`,
      met: delivered === MESSAGES && both.length <= window && failoverSeconds <= limit,
      extra: {
        submitted_to_both: both.length,
        accepted_by_alpha_and_submitted_to_beta: acceptedBoth.length,
        alpha_window: window,
        beta_first_submission_after_kill_s: failoverSeconds,
        after_seconds: AFTER_SECONDS,
        alpha_submit_sm_at_kill: submits,
        alpha_submit_sm_read: alphaLog.filter(isSubmit).length,
        alpha_accepted: acceptedByAlpha.size,
        beta_submit_sm_read: betaLog.filter(isSubmit).length,
        not_delivered: MESSAGES - delivered,
        receipt_lost_with_alpha: receiptLostWithAlpha,
        ...Object.fromEntries(
          Object.entries(counts)
            .filter(([status]) => status !== "DELIVERED")
            .map(([status, n]) => [status.toLowerCase(), n]),
        ),
        seconds,
      },
    });
  } finally {
    await service?.stop();
    await Promise.all([alpha?.stop(), beta?.stop()]);
    await ctx.dropDatabases(dbName);
  }
}
