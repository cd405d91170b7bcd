// Figure 21 of issue 41 (run.ts's ids "21" and "usage"): GetUsage's cost does not grow with the
// messages. One service, two accounts, each with a month of traffic over 30 UTC days and 50
// countries, seeded straight into the service's database the way the service writes it: message
// documents as a batch stores them (store/messages.ts acceptedMessage, ids from the service's own
// sequence) and, per chunk, the batch's ledger entry with the usage it adds, written by the
// service's own code (store/ledger.ts recordEntries, chargedUsage); each chunk is one day's batch
// to 50 countries, the days in turn. "month" has 1 million messages (100000 with --quick),
// "small" 10000. Both end with the same 1500 usage rows (30 days x 50 countries), which is what
// GetUsage reads; a GetUsage that summed messages would read 100 times more for "month".
//   21. GET /usage?since&until&groupBy=day,country and Connect UsageService.GetUsage, each account
//       in turn (alternated), median of several after warm-ups: month <= 1 s, and <= 2 x small.
// Beside it, once per account: the driver reading and summing the account's messages (what a
// GetUsage summing messages would cost), to show that the seeded month is large enough to tell.

import { openStore, type Store } from "../src/store/database.ts";
import type { MessageDoc } from "../src/store/documents.ts";
import { chargedUsage, entryOf, recordEntries } from "../src/store/ledger.ts";
import { acceptedMessage } from "../src/store/messages.ts";
import { reserveIds } from "../src/store/sequences.ts";
import { type Account, alternated, type BenchContext, createAccount } from "./common.ts";
import { median, startProcess } from "./processes.ts";

const DAYS = 30;
const SINCE = "2026-10-01";
const UNTIL = "2026-10-31";
const CHUNK = 10_000;
/** Seeding stops here even if the month is not full (the run's time). */
const SEED_BUDGET_MS = 180_000;
/**
 * Seeding also stops when the emulator's live heap passes this share of its maximum: a message
 * takes about 5 KB of it with the service's indexes (measured: 1.05 GB collected after 200000,
 * the change-stream log included), so a million is about 75 % of the default heap of a 24 GiB
 * machine (6 GiB), and an emulator out of memory ends the whole run. Checked every
 * HEAP_CHECK_EVERY messages.
 */
const HEAP_SHARE = 0.7;
const HEAP_CHECK_EVERY = 100_000;
const PRICE_PER_PART_MICROS = 45_000;
// biome-ignore format: 50 codes, one table
const COUNTRIES = [
  "AR", "AT", "AU", "BE", "BG", "BR", "CA", "CH", "CL", "CN", "CO", "CZ", "DE", "DK", "EG",
  "ES", "FI", "FR", "GB", "GR", "HK", "HU", "ID", "IE", "IL", "IN", "IT", "JP", "KE", "KR",
  "MA", "MX", "MY", "NG", "NL", "NO", "NZ", "PE", "PH", "PL", "PT", "RO", "SE", "SG", "TH",
  "TR", "UA", "US", "VN", "ZA",
];

/** Message `i` of a batch sent on `day` (0 to DAYS - 1): the countries in turn. */
function monthMessage(
  accountId: string,
  id: number,
  batchId: number,
  day: number,
  i: number,
): MessageDoc {
  const country = COUNTRIES[i % COUNTRIES.length] as string;
  const createdAt = new Date(Date.UTC(2026, 9, 1 + day, 8) + (i % 3600) * 1000);
  return acceptedMessage(
    {
      id,
      accountId,
      batchId,
      to: `+4915${String(10_000_000 + (i % 90_000_000))}`,
      from: "SMSINFO",
      text: "Your code is 123456. It expires in 10 minutes.",
      parts: 1,
      ttl: 21_600,
      routing: {
        route: { name: "default", carriers: ["default"] },
        country,
        numberType: "MOBILE",
        pricePerPartMicros: PRICE_PER_PART_MICROS,
      },
    },
    createdAt,
  );
}

/** Whether the emulator has room for more (always, on another database). */
async function heapHasRoom(ctx: BenchContext): Promise<boolean> {
  const full = (heap: { usedBytes: number; maxBytes: number } | undefined) =>
    heap !== undefined && heap.usedBytes > HEAP_SHARE * heap.maxBytes;
  if (!full(await ctx.databaseHeap())) return true;
  // What is in use counts garbage too: only a collected heap says it is full.
  await ctx.collectDatabaseHeap();
  return !full(await ctx.databaseHeap());
}

/**
 * Writes up to `count` messages of a month for `accountId`, in chunks of CHUNK stored as batches,
 * each with its ledger entry and usage; stops early past SEED_BUDGET_MS or when the emulator's
 * heap is full enough. Returns how many were written, in how long, and why it stopped early.
 */
async function seedMonth(ctx: BenchContext, store: Store, accountId: string, count: number) {
  const started = performance.now();
  let written = 0;
  let stopped: "time" | "memory" | undefined;
  let chunks = 0;
  let checked = 0;
  while (written < count) {
    if (performance.now() - started > SEED_BUDGET_MS) {
      stopped = "time";
      break;
    }
    if (written >= checked + HEAP_CHECK_EVERY) {
      checked = written;
      if (!(await heapHasRoom(ctx))) {
        stopped = "memory";
        break;
      }
    }
    // A batch is charged on one day (its usage: a row per country); the days take turns, so a
    // month stopped early still spans them all.
    const size = Math.min(CHUNK, Math.ceil(count / DAYS), count - written);
    const day = chunks++ % DAYS;
    const [batchId, firstId] = await Promise.all([
      reserveIds(store.counters, "batch", 1),
      reserveIds(store.counters, "message", size),
    ]);
    const docs = Array.from({ length: size }, (_, k) =>
      monthMessage(accountId, firstId + k, batchId, day, k),
    );
    await store.messages.insertMany(docs, { ordered: false });
    const amountMicros = size * PRICE_PER_PART_MICROS;
    await recordEntries(store, [
      {
        entry: entryOf(
          accountId,
          { kind: "batch", ref: batchId, at: docs[0]?.createdAt ?? new Date() },
          -amountMicros,
        ),
        usage: docs.map((doc) =>
          chargedUsage({ ...doc, amountMicros: doc.parts * PRICE_PER_PART_MICROS }),
        ),
      },
    ]);
    written += size;
  }
  return { written, seconds: (performance.now() - started) / 1000, stopped };
}

type Side = "small" | "month";
type Door = "rest" | "connect";

interface UsageAnswer {
  rows: { messages: number | string }[];
}

async function getUsage(baseUrl: string, account: Account, door: Door, groupBy: boolean) {
  const response =
    door === "rest"
      ? await fetch(
          `${baseUrl}/usage?${new URLSearchParams({
            ...account,
            since: SINCE,
            until: UNTIL,
            ...(groupBy && { groupBy: "day,country" }),
          })}`,
        )
      : await fetch(`${baseUrl}/sms.v1.UsageService/GetUsage`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Basic ${Buffer.from(`${account.apiKey}:${account.apiSecret}`).toString("base64")}`,
          },
          body: JSON.stringify({
            startDate: SINCE,
            endDate: UNTIL,
            groupBy: groupBy ? ["USAGE_GROUP_DAY", "USAGE_GROUP_COUNTRY"] : [],
          }),
        });
  const body = (await response.json()) as UsageAnswer;
  if (response.status !== 200) throw new Error(`figure 21 ${door}: ${JSON.stringify(body)}`);
  return body.rows;
}

export async function usageFigure(ctx: BenchContext): Promise<void> {
  if (!ctx.runs("21", "usage")) return;
  const monthCount = ctx.quick ? 100_000 : 1_000_000;
  const smallCount = 10_000;
  ctx.log(`figure 21 (issue 41): GetUsage over ${monthCount} messages against ${smallCount}`);
  const dbName = "bench_usage";
  const api = await startProcess(
    "src/main.ts",
    ctx.serviceEnv(dbName, { SMS_RUN_WORKERS: "false" }),
  );
  try {
    const accounts: Record<Side, Account> = {
      small: await createAccount(api.baseUrl, undefined, "small"),
      month: await createAccount(api.baseUrl, undefined, "month"),
    };
    const store = openStore(ctx.client.db(dbName));
    const small = await seedMonth(ctx, store, accounts.small.apiKey, smallCount);
    const month = await seedMonth(ctx, store, accounts.month.apiKey, monthCount);
    ctx.log(
      `figure 21: seeded ${month.written} messages in ${month.seconds.toFixed(0)} s${month.stopped ? ` (stopped early: ${month.stopped})` : ""}, ${small.written} in ${small.seconds.toFixed(0)} s`,
    );
    const usageRows = await store.usage.countDocuments({});
    // The usage rows hold every seeded message (the figure reads what it claims to).
    for (const side of ["small", "month"] as const) {
      const [total] = await getUsage(api.baseUrl, accounts[side], "rest", false);
      const expected = side === "month" ? month.written : small.written;
      if (Number(total?.messages) !== expected)
        throw new Error(`figure 21: ${side}'s usage counts ${total?.messages}, not ${expected}`);
    }
    // What reading and summing the messages would cost, once per account, for comparison.
    const sumMs: Record<Side, number> = { small: 0, month: 0 };
    for (const side of ["small", "month"] as const) {
      await ctx.collectDatabaseHeap();
      const started = performance.now();
      // As the operator's view sums them (accounts/usage.ts): read through the account's index.
      const sums = new Map<string, number>();
      const cursor = store.messages.find(
        { accountId: accounts[side].apiKey },
        { projection: { createdAt: 1, country: 1, parts: 1 } },
      );
      for await (const doc of cursor) {
        const key = `${doc.createdAt.toISOString().slice(0, 10)}/${doc.country}`;
        sums.set(key, (sums.get(key) ?? 0) + doc.parts);
      }
      sumMs[side] = performance.now() - started;
    }
    ctx.log(
      `figure 21: reading and summing the messages: month ${sumMs.month.toFixed(0)} ms, small ${sumMs.small.toFixed(0)} ms`,
    );

    const warmUps = ctx.quick ? 2 : 5;
    const rounds = ctx.quick ? 5 : 15;
    const timed = async (side: Side, door: Door) => {
      const started = performance.now();
      const rows = await getUsage(api.baseUrl, accounts[side], door, true);
      const ms = performance.now() - started;
      if (rows.length === 0) throw new Error(`figure 21: ${side} has no usage rows`);
      return ms;
    };
    for (let i = 0; i < warmUps; i++)
      for (const side of ["small", "month"] as const)
        for (const door of ["rest", "connect"] as const) await timed(side, door);
    await ctx.collectDatabaseHeap();
    const times: Record<Door, Record<Side, number[]>> = {
      rest: { small: [], month: [] },
      connect: { small: [], month: [] },
    };
    for (let r = 0; r < rounds; r++) {
      for (const door of ["rest", "connect"] as const)
        await alternated(1, ["small", "month"], (side) => timed(side, door), times[door], r);
    }
    for (const door of ["rest", "connect"] as const) {
      const t = times[door];
      ctx.log(`figure 21 ${door}: month ${t.month.map((v) => v.toFixed(0)).join(" ")} ms`);
      ctx.log(`figure 21 ${door}: small ${t.small.map((v) => v.toFixed(0)).join(" ")} ms`);
      const value = median(t.month);
      const base = median(t.small);
      ctx.figures.push({
        figure: `21 (issue 41). ${door === "rest" ? "GET /usage?groupBy=day,country" : "Connect UsageService.GetUsage (day, country)"}, a month of ${month.written} messages`,
        value,
        unit: "ms",
        baseline: base,
        baselineName: `same run, a month of ${small.written} messages`,
        ratio: value / base,
        target: "<= 1000 ms and <= 2 x",
        met: value <= 1000 && value <= 2 * base,
        extra: {
          messages: month.written,
          seed_s: month.seconds,
          // 0: the month is full; seeding stopped early, 1: for time, 2: for memory.
          seed_stopped: month.stopped === undefined ? 0 : month.stopped === "time" ? 1 : 2,
          usage_rows: usageRows,
          sum_messages_ms: sumMs.month,
          sum_messages_small_ms: sumMs.small,
        },
      });
    }
  } finally {
    await api.stop();
    await ctx.dropDatabases(dbName);
  }
}
