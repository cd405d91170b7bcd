import { MongoNetworkError } from "mongodb";
import { describe, expect, it } from "vitest";
import { expireMessages, recordSubmissions } from "../../src/delivery/delivery-queue.ts";
import { refundUnsentParts } from "../../src/money/refunds.ts";
import { withdrawMessages } from "../../src/opt-outs/withdrawals.ts";
import { addCredit, createAccount } from "../../src/store/accounts.ts";
import { storeBatch } from "../../src/store/batch-commits.ts";
import { ChargeConfirmations } from "../../src/store/charge-confirmations.ts";
import { settleAbandonedCharges } from "../../src/store/charge-settler.ts";
import { chargeThenStore } from "../../src/store/charges.ts";
import type { Store } from "../../src/store/database.ts";
import { Deadline } from "../../src/store/deadline.ts";
import type { MessageDoc } from "../../src/store/documents.ts";
import { MessageWriter } from "../../src/store/message-writer.ts";
import { acceptedMessage } from "../../src/store/messages.ts";
import { markUnsentRefund, pushPendingRefund } from "../../src/store/refunds.ts";
import { nextTestId } from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

// The ledger's rule (docs/design.md "Money"): credit at creation plus the sum of the entries is
// the credit whenever nothing is pending, and nothing is charged or refunded twice, whatever
// interleaving of sends, batches, refunds and credits ran and wherever a process died (kill -9:
// from that instant none of its writes happens, the one under way may have landed or not).

const fixture = useTestStore();
const PRICE = 10_000;

/** A small seeded generator: a failing interleaving can be run again. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const WRITES = new Set([
  "bulkWrite",
  "updateOne",
  "updateMany",
  "findOneAndUpdate",
  "insertMany",
  "insertOne",
  "deleteMany",
]);

/**
 * The store as one process sees it: after `crashAfter` writes it dies, the write under way landed
 * or not (at random), and every later call fails without reaching the database.
 */
function processStore(store: Store, crashAfter: number, rnd: () => number): Store {
  let writes = 0;
  let dead = false;
  const wrap = <T extends object>(collection: T): T =>
    new Proxy(collection, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          if (dead) throw new MongoNetworkError("the process is dead");
          if (!WRITES.has(String(name))) return value.apply(target, args);
          if (++writes < crashAfter) return value.apply(target, args);
          dead = true;
          if (rnd() < 0.5) throw new MongoNetworkError("killed before the write");
          return Promise.resolve(value.apply(target, args)).then(() => {
            throw new MongoNetworkError("killed after the write");
          });
        };
      },
    });
  return {
    ...store,
    accounts: wrap(store.accounts),
    messages: wrap(store.messages),
    batches: wrap(store.batches),
    ledger: wrap(store.ledger),
    usage: wrap(store.usage),
  };
}

function message(accountId: string, parts: number, batchId?: number): MessageDoc {
  const doc = acceptedMessage(
    {
      id: nextTestId(),
      accountId,
      to: "+4915112345678",
      from: "SMSINFO",
      text: "hi",
      parts,
      ttl: 600,
      ...(batchId !== undefined && { batchId }),
    },
    new Date(),
  );
  doc.pricePerPartMicros = PRICE;
  doc.country = "DE";
  return doc;
}

/** One process's share of the storm: concurrent sends, a batch, refunds and credits. */
async function storm(store: Store, apiKey: string, rnd: () => number): Promise<void> {
  const confirmations = new ChargeConfirmations(store);
  const writer = new MessageWriter(store, store.messages, confirmations);
  const ops: Promise<unknown>[] = [];
  // A dead process's calls fail: their failures are the point, not a test failure.
  const run = (op: Promise<unknown>) => ops.push(op.catch(() => undefined));
  for (let i = 0; i < 12; i++) {
    const doc = message(apiKey, 1 + (i % 2));
    run(writer.write(apiKey, doc.parts * PRICE, doc, new Deadline(Date.now() + 5000)));
  }
  const batchId = nextTestId();
  const docs = Array.from({ length: 20 }, (_, i) => message(apiKey, 1 + (i % 3), batchId));
  const amount = docs.reduce((sum, d) => sum + d.parts * PRICE, 0);
  run(
    chargeThenStore(
      store,
      apiKey,
      { ref: batchId, kind: "batch", amountMicros: amount, at: new Date() },
      () =>
        storeBatch(store, docs, {
          _id: batchId,
          accountId: apiKey,
          name: "storm",
          totalCount: docs.length,
          acceptedCount: docs.length,
          rejectedCount: 0,
          createdAt: new Date(),
        }),
    ).then((result) => {
      if (typeof result !== "string")
        confirmations.add(apiKey, {
          ref: batchId,
          kind: "batch",
          amountMicros: amount,
          at: new Date(),
        });
    }),
  );
  run(addCredit(store, apiKey, Math.round(rnd() * 50) * PRICE, new Date(), "top-up"));
  // Messages accepted earlier end SEND_ERROR (a carrier refused them, some after taking a part)
  // or are withdrawn; either way their unsent parts are refunded. Messages of a batch not
  // committed are never worked (delivery claims skip them): the settler rolls them back.
  const committed = await fixture.store.batches.distinct("_id", { accountId: apiKey });
  const accepted = await fixture.store.messages
    .find(
      {
        accountId: apiKey,
        status: "ACCEPTED",
        $or: [{ batchId: { $exists: false } }, { batchId: { $in: committed } }],
      },
      { limit: 12 },
    )
    .toArray();
  const refused = accepted.slice(0, 6);
  run(
    recordSubmissions(
      store.messages,
      refused.map((m) => ({
        id: m._id,
        carrierIds: m.parts > 1 && rnd() < 0.5 ? ["c-1"] : [],
        error: "refused by the carrier",
        expiresAt: m.expiresAt,
      })),
      new Date(),
    ).then(() => refundUnsentParts(store, new Date(), PRICE)),
  );
  run(withdrawMessages(store, apiKey, accepted.slice(6), PRICE, new Date()));
  await Promise.allSettled(ops);
  await confirmations.flush().catch(() => undefined);
}

/** Finishes what crashes left: the refunder and the settler, as on a restart, until nothing is left. */
async function settleEverything(store: Store): Promise<void> {
  for (let round = 0; round < 5; round++) {
    await refundUnsentParts(store, new Date(), PRICE);
    await settleAbandonedCharges(store, 0, new Date(Date.now() + 60_000));
  }
}

async function books(apiKey: string) {
  const { store } = fixture;
  const account = await store.accounts.findOne({ _id: apiKey });
  const entries = await store.ledger.find({ accountId: apiKey }).toArray();
  return { account, entries, sum: entries.reduce((s, e) => s + e.amountMicros, 0) };
}

describe("the ledger", () => {
  it("after a storm of sends, batches, refunds and credits, with processes killed anywhere, credit at creation + the entries = the credit, nothing charged or refunded twice", async () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const rnd = random(seed);
      const { account } = await createAccount(fixture.store.accounts, {
        name: `storm ${seed}`,
        creditMicros: 400 * PRICE,
      });
      const apiKey = account._id;
      for (let round = 0; round < 8; round++) {
        // Most processes die somewhere in their share; some finish it.
        const crashAfter = rnd() < 0.75 ? 1 + Math.floor(rnd() * 40) : Number.POSITIVE_INFINITY;
        await storm(processStore(fixture.store, crashAfter, rnd), apiKey, rnd);
        // A restarted settler may die too.
        if (rnd() < 0.3) {
          const settler = processStore(fixture.store, 1 + Math.floor(rnd() * 6), rnd);
          await settleAbandonedCharges(settler, 0, new Date(Date.now() + 60_000)).catch(
            () => undefined,
          );
        }
      }
      await settleEverything(fixture.store);

      const { account: after, entries, sum } = await books(apiKey);
      expect(after?.pendingCharges, `seed ${seed}: nothing pending`).toEqual([]);
      expect(after?.creditMicros, `seed ${seed}: credit at creation + entries`).toBe(
        (after?.initialCreditMicros ?? 0) + sum,
      );

      // Each stored message is charged in exactly one entry, and refunded in at most one.
      const stored = await fixture.store.messages.find({ accountId: apiKey }).toArray();
      const chargedIn = new Map<number, number>();
      const refundedIn = new Map<number, number>();
      for (const e of entries) {
        const target = e.kind === "REFUND" ? refundedIn : chargedIn;
        for (const id of e.messageIds ?? []) target.set(id, (target.get(id) ?? 0) + 1);
      }
      const batchIds = new Set(entries.filter((e) => e.batchId).map((e) => e.batchId));
      for (const m of stored) {
        const charged =
          (chargedIn.get(m._id) ?? 0) + (m.batchId && batchIds.has(m.batchId) ? 1 : 0);
        expect(charged, `seed ${seed}: message ${m._id} charged once`).toBe(1);
        expect(
          refundedIn.get(m._id) ?? 0,
          `message ${m._id} refunded at most once`,
        ).toBeLessThanOrEqual(1);
        expect(m.refundDue, `message ${m._id} left to refund`).toBeUndefined();
      }
      // The credit is what was put in less what the stored messages cost, unsent parts given back.
      const credits = entries
        .filter((e) => e.kind === "CREDIT")
        .reduce((s, e) => s + e.amountMicros, 0);
      const cost = stored.reduce((s, m) => {
        const unsent =
          m.refund !== undefined || m.withdrawal !== undefined
            ? m.withdrawal !== undefined
              ? m.parts
              : m.parts - (m.carrierIds?.length ?? 0)
            : 0;
        return s + (m.parts - unsent) * PRICE;
      }, 0);
      expect(after?.creditMicros, `seed ${seed}: credit = put in - cost`).toBe(
        400 * PRICE + credits - cost,
      );
      // Usage rows add up to the ledger's charges and refunds, unless a crash fell between an
      // entry and its usage (a count lost, never doubled).
      const usage = await fixture.store.usage.find({ accountId: apiKey }).toArray();
      const charged = -entries
        .filter((e) => e.kind === "CHARGE")
        .reduce((s, e) => s + e.amountMicros, 0);
      expect(usage.reduce((s, u) => s + u.chargedMicros, 0)).toBeLessThanOrEqual(charged);
    }
  }, 120_000);

  it("a message refused by the carrier after it took one of its parts is refunded the others, once", async () => {
    const { store } = fixture;
    const { account } = await createAccount(store.accounts, { name: "r", creditMicros: 0 });
    const doc = message(account._id, 3);
    await store.messages.insertOne(doc);
    await recordSubmissions(
      store.messages,
      [{ id: doc._id, carrierIds: ["c-1"], error: "refused", expiresAt: doc.expiresAt }],
      new Date(),
    );
    await Promise.all([
      refundUnsentParts(store, new Date(), PRICE),
      refundUnsentParts(store, new Date(), PRICE),
    ]);
    await settleEverything(store);
    const { account: after, entries } = await books(account._id);
    expect(after?.creditMicros).toBe(2 * PRICE);
    expect(entries.map((e) => ({ kind: e.kind, amountMicros: e.amountMicros }))).toEqual([
      { kind: "REFUND", amountMicros: 2 * PRICE },
    ]);
    const usage = await store.usage.find({ accountId: account._id }).toArray();
    expect(usage.map((u) => [u.country, u.refundedMicros])).toEqual([["DE", 2 * PRICE]]);
  });

  it("a refund's claim of its messages that lands after the settler settled it takes nothing: the settler claimed them, and refunded them once", async () => {
    const { store } = fixture;
    const { account } = await createAccount(store.accounts, { name: "late", creditMicros: 0 });
    const doc = message(account._id, 1);
    await store.messages.insertOne(doc);
    await recordSubmissions(
      store.messages,
      [{ id: doc._id, carrierIds: [], error: "refused", expiresAt: doc.expiresAt }],
      new Date(),
    );
    // A sweep pushed its refund and stalled (or died) with its claim of the message sent but
    // not yet applied; the refund ages past the settler's cutoff.
    const stalled = await pushPendingRefund(
      store.accounts,
      account._id,
      [{ id: doc._id, amountMicros: PRICE }],
      new Date(Date.now() - 60_000),
      { unsentParts: true },
    );
    await settleAbandonedCharges(store, 30_000, new Date());
    await markUnsentRefund(store.messages, stalled); // the late claim
    await settleEverything(store);
    const { account: after, entries } = await books(account._id);
    expect(after?.creditMicros).toBe(PRICE);
    expect(entries.map((e) => [e.kind, e.amountMicros, e.messageIds])).toEqual([
      ["REFUND", PRICE, [doc._id]],
    ]);
  });

  it("a message whose ttl ran out before any carrier took it is refunded; one that was sent is not", async () => {
    const { store } = fixture;
    const { account } = await createAccount(store.accounts, { name: "x", creditMicros: 0 });
    const queued = message(account._id, 2);
    const sent = message(account._id, 1);
    const past = new Date(Date.now() - 1000);
    queued.expiresAt = past;
    sent.expiresAt = past;
    await store.messages.insertMany([queued, sent]);
    await store.messages.updateOne(
      { _id: sent._id },
      { $set: { status: "SENT", carrierIds: ["c-9"] } },
    );
    expect(await expireMessages(store.messages, [queued._id, sent._id], new Date())).toBe(2);
    await settleEverything(store);
    const after = await store.messages.find({ _id: { $in: [queued._id, sent._id] } }).toArray();
    expect(after.map((m) => [m.status, m.reason])).toEqual([
      ["DELIVERY_ERROR", "Expired"],
      ["DELIVERY_ERROR", "Expired"],
    ]);
    const { account: credited, entries } = await books(account._id);
    expect(credited?.creditMicros).toBe(2 * PRICE);
    expect(entries.map((e) => [e.kind, e.amountMicros, e.messageIds])).toEqual([
      ["REFUND", 2 * PRICE, [queued._id]],
    ]);
  });

  it("keeps only recent days of spend on the account: a debit removes the week before", async () => {
    const { store } = fixture;
    const { account } = await createAccount(store.accounts, {
      name: "d",
      creditMicros: 10 * PRICE,
    });
    const old = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
    await store.accounts.updateOne(
      { _id: account._id },
      { $set: { [`spentByDay.${old}`]: PRICE } },
    );
    const confirmations = new ChargeConfirmations(store);
    const writer = new MessageWriter(store, store.messages, confirmations);
    const doc = message(account._id, 1);
    await writer.write(account._id, PRICE, doc, new Deadline(Date.now() + 5000));
    const after = await store.accounts.findOne({ _id: account._id });
    expect(after?.spentByDay).toEqual({ [new Date().toISOString().slice(0, 10)]: PRICE });
  });
});
