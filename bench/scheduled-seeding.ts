// Figure 22's million scheduled messages (scheduled-ahead-figure.ts), stored the service's way
// without sending them through the API (hours on the emulator): one POST /sms-batch with sendAt
// stores 10000, and copies of those documents (every field and index the service keeps) are
// inserted under ids the service's own sequence reserves (`reserveIds`), their times moved a
// quarter of an hour per copy so they spread over days. Seeding stops early, and the figure says
// so, past 7 minutes or 75 % of the emulator's heap.

import { openStore } from "../src/store/database.ts";
import type { MessageDoc } from "../src/store/documents.ts";
import { reserveIds } from "../src/store/sequences.ts";
import { type Account, type BenchContext, batchBody, postBatch, sleep } from "./common.ts";
import type { ServiceProcess } from "./processes.ts";

const COPY_BATCH = 10_000;
const DAY = 86_400_000;
// The emulator inserts these copies at about 3000 a second (slower as its indexes grow): a million
// takes 5 to 6 minutes.
const SEED_LIMIT_MS = 420_000;
const HEAP_SHARE = 0.75;

export interface Seeded {
  count: number;
  seconds: number;
  /** Why seeding stopped short of the target; empty when it did not. */
  limit: string;
}

/**
 * Stores `target` messages of `account` scheduled 2 to 30 days ahead in `dbName`, the service's
 * way (see the header): one scheduled batch through the API, then copies of its documents.
 */
export async function seedScheduled(
  ctx: BenchContext,
  api: ServiceProcess,
  account: Account,
  dbName: string,
  target: number,
): Promise<Seeded> {
  const store = openStore(ctx.client.db(dbName));
  const sendAt = new Date(Date.now() + 2 * DAY).toISOString();
  const body = JSON.parse(batchBody(account, COPY_BATCH, "See you on the day")) as object;
  const { id: batchId } = await postBatch(api.baseUrl, JSON.stringify({ ...body, sendAt }));
  // Copied as they wait for their day: their ACCEPTED notifications settled. Copies of pending
  // ones would be a million notifications due at once, which the service's notifier would then
  // work through during the figure (the cause of the 503s in the first full-size runs).
  const deadline = Date.now() + 120_000;
  while (await store.messages.findOne({ batchId, notifyAt: { $exists: true } })) {
    if (Date.now() > deadline)
      throw new Error("figure 22: the scheduled batch's notifications did not settle in 120 s");
    await sleep(200);
  }
  const originals = await store.messages.find({ batchId }).sort({ _id: 1 }).toArray();
  if (originals.length !== COPY_BATCH || !originals[0]?.sendAt)
    throw new Error(`figure 22: the scheduled batch stored ${originals.length} messages`);
  const started = performance.now();
  let count = originals.length;
  let limit = "";
  for (let copy = 1; count < target; copy++) {
    if (performance.now() - started > SEED_LIMIT_MS) {
      limit = `seeding time (${SEED_LIMIT_MS / 1000} s)`;
      break;
    }
    if (copy % 10 === 0) {
      const full = await heapFull(ctx);
      if (full) {
        limit = full;
        break;
      }
    }
    const n = Math.min(COPY_BATCH, target - count);
    const first = await reserveIds(store.counters, "message", n);
    // A quarter of an hour later per copy, wrapping within 28 days: spread, always days ahead.
    const shift = (copy * 15 * 60_000) % (28 * DAY);
    const later = (date: Date) => new Date(date.getTime() + shift);
    const docs = originals.slice(0, n).map(
      (doc, i): MessageDoc => ({
        ...doc,
        _id: first + i,
        ...(doc.sendAt && { sendAt: later(doc.sendAt) }),
        ...(doc.deliveryAt && { deliveryAt: later(doc.deliveryAt) }),
        expiresAt: later(doc.expiresAt),
      }),
    );
    await store.messages.insertMany(docs, { ordered: false });
    count += n;
    if (count % 100_000 === 0)
      ctx.log(
        `figure 22: ${count} scheduled in ${((performance.now() - started) / 1000).toFixed(0)} s`,
      );
  }
  const seconds = (performance.now() - started) / 1000;
  ctx.log(
    `figure 22: ${count} messages scheduled ahead in ${seconds.toFixed(0)} s${limit && `, stopped by ${limit}`}`,
  );
  return { count, seconds, limit };
}

/** Why the emulator's heap is too full to seed more (after a collection), or "". */
async function heapFull(ctx: BenchContext): Promise<string> {
  let heap = await ctx.databaseHeap();
  if (!heap || heap.usedBytes < HEAP_SHARE * heap.maxBytes) return "";
  await ctx.collectDatabaseHeap();
  heap = await ctx.databaseHeap();
  if (!heap || heap.usedBytes < HEAP_SHARE * heap.maxBytes) return "";
  const gb = (bytes: number) => (bytes / 1024 ** 3).toFixed(1);
  return `the emulator's heap (${gb(heap.usedBytes)} of ${gb(heap.maxBytes)} GB in use)`;
}
