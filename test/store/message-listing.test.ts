/**
 * Every list reads only its page through an index that starts with the account. On a real mongod
 * (MONGODB_URI or mongodb-memory-server) the plan is checked with explain: an IXSCAN on the list's
 * index, documents examined about the page size, no in-memory SORT, among many messages of other
 * accounts and older ones of the same. The emulator (mongo-java-server) has no query planner and
 * answers explain without a plan: there the test checks what it can, that the indexes exist with
 * the keys the queries are hinted to, and the explain part is skipped, saying so.
 */
import type { Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openStore, type Store } from "../../src/store/database.ts";
import type { MessageDoc } from "../../src/store/documents.ts";
import { ensureIndexes } from "../../src/store/indexes.ts";
import {
  LISTING_INDEXES,
  type MessageFilter,
  messageIndexFor,
  messagePageQuery,
} from "../../src/store/message-listing.ts";
import { acceptedMessage } from "../../src/store/messages.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";

let database: TestDatabase;
let store: Store;
const PAGE = 50;
const ACCOUNT = "listed";
const t0 = Date.UTC(2026, 0, 1);

beforeAll(async () => {
  database = await testDatabase({ label: "listing" });
  store = openStore(database.db);
  await ensureIndexes(store);
  // 6000 messages: 3000 of the listed account (a third of them in batch 7, every tenth to one
  // recipient, a fifth DELIVERED) among 3000 of another account, all at distinct times.
  const docs: MessageDoc[] = [];
  for (let i = 1; i <= 6000; i++) {
    const mine = i % 2 === 0;
    const doc = acceptedMessage(
      {
        id: i,
        accountId: mine ? ACCOUNT : "other",
        to: i % 10 === 0 ? "+4915100000001" : `+49151${String(i).padStart(8, "0")}`,
        from: "SMSINFO",
        text: "x",
        parts: 1,
        ttl: 60,
        ...(i % 3 === 0 && { batchId: 7 }),
      },
      new Date(t0 + i * 1000),
    );
    if (i % 5 === 0) doc.status = "DELIVERED";
    docs.push(doc);
  }
  await store.messages.insertMany(docs);
});
afterAll(() => database?.close());

const FILTERS: [string, Omit<MessageFilter, "accountId">][] = [
  ["no filter", {}],
  ["status", { status: "DELIVERED" }],
  ["recipient", { to: "+4915100000001" }],
  ["batch", { batchId: 7 }],
  ["time range", { start: new Date(t0 + 1000 * 1000), end: new Date(t0 + 5000 * 1000) }],
];

describe("indexes of the lists", () => {
  it("exist with the keys their queries are hinted to", async () => {
    const existing = new Map(
      (await store.messages.listIndexes().toArray()).map((index) => [index.name, index.key]),
    );
    for (const { name, key } of LISTING_INDEXES.messages) expect(existing.get(name)).toEqual(key);
    const batches = await store.batches.listIndexes().toArray();
    expect(batches.map((index) => index.name)).toContain("account_batches_created");
    const names = await store.senderNames.listIndexes().toArray();
    expect(names.map((index) => index.name)).toContain("account_sender_names_created");
  });

  it.each(FILTERS)("%s: the page's query is hinted to an index led by the account", (_, f) => {
    const filter = { accountId: ACCOUNT, ...f };
    const { query, options } = messagePageQuery(filter, [t0 + 4000 * 1000, 4000]);
    expect(options.hint).toBe(messageIndexFor(filter));
    const index = LISTING_INDEXES.messages.find((i) => i.name === options.hint);
    const key = Object.keys(index?.key ?? {});
    expect(key[0]).toBe("accountId");
    expect(key.slice(-2)).toEqual(["createdAt", "_id"]);
    expect(query.accountId).toBe(ACCOUNT);
    // The sort is the index's order after its equality fields: no in-memory sort.
    expect(options.sort).toEqual({ createdAt: -1, _id: -1 });
  });
});

describe("pages", () => {
  it.each(FILTERS)(
    "%s: the page after a cursor is the next messages, newest first",
    async (_, f) => {
      const filter: MessageFilter = { accountId: ACCOUNT, ...f };
      const { query, options } = messagePageQuery(filter, [t0 + 4000 * 1000, 4000]);
      const page = await store.messages
        .find(query, { ...options, limit: PAGE, projection: { _id: 1 } })
        .toArray();
      const expected = Array.from({ length: 6000 }, (_, i) => 6000 - i)
        .filter((i) => i < 4000 && i % 2 === 0)
        .filter((i) => !f.status || i % 5 === 0)
        .filter((i) => !f.to || i % 10 === 0)
        .filter((i) => !f.batchId || i % 3 === 0)
        .filter((i) => !f.start || (i >= 1000 && i < 5000))
        .slice(0, PAGE);
      expect(page.map((m) => m._id)).toEqual(expected);
    },
  );
});

// mongo-java-server has no explain command and no planner (see the file's comment).
const planned = inject("mongoKind") !== "emulator";

describe.skipIf(!planned)("plans (explain, on a real mongod only)", () => {
  it.each(FILTERS)("%s: IXSCAN on its index, about a page of documents examined", async (_, f) => {
    const filter = { accountId: ACCOUNT, ...f };
    // A page in the middle of the list: after the cursor of message 4000.
    const { query, options } = messagePageQuery(filter, [t0 + 4000 * 1000, 4000]);
    const explained: Document = await store.messages
      .find(query, { ...options, limit: PAGE + 1 })
      .explain("executionStats");
    const winning = explained.queryPlanner?.winningPlan;
    const stages = planStages(winning);
    const scan = stages.find((s) => s.stage === "IXSCAN");
    expect(scan?.indexName).toBe(messageIndexFor(filter));
    expect(stages.some((s) => s.stage === "SORT")).toBe(false);
    const examined = explained.executionStats.totalDocsExamined as number;
    const returned = explained.executionStats.nReturned as number;
    // Every filter here is in the index's keys: the documents read are those answered, plus at
    // most one per branch of the cursor's tie-breaking $or when the planner splits it.
    expect(returned).toBeGreaterThan(0);
    expect(examined).toBeLessThanOrEqual(PAGE + 2);
  });
});

function planStages(plan: Document): Document[] {
  const inner = [plan.inputStage, ...(plan.inputStages ?? []), plan.queryPlan].filter(Boolean);
  return [plan, ...inner.flatMap(planStages)];
}
