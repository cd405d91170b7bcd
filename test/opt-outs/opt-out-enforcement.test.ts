/**
 * What an opt-out does to delivery (docs/design.md "Two-way messaging": "Scope and effect", "Replies"), on
 * a real database with the real delivery worker and the simulator carrier: a handset's STOP,
 * START and HELP through the inbound hook (OptOutRules.applyInbound), messages accepted before
 * the STOP withdrawn with their credit given back, the worker's check after its claim, and the
 * race of a STOP with sends.
 */
import { performance } from "node:perf_hooks";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  Carrier,
  CarrierPart,
  ReceiptHandler,
  SubmitResult,
} from "../../src/delivery/carrier.ts";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import { openOptOuts, optOutId, optOutKey } from "../../src/opt-outs/list.ts";
import { type InboundForOptOut, OptOutRules } from "../../src/opt-outs/rules.ts";
import { StopFeed } from "../../src/opt-outs/stop-feed.ts";
import { OPTED_OUT_ERROR } from "../../src/opt-outs/withdrawals.ts";
import { markLanesDue } from "../../src/scheduling/lanes.ts";
import type { MessageDoc } from "../../src/store/documents.ts";
import { acceptedMessage } from "../../src/store/messages.ts";
import { IdAllocator } from "../../src/store/sequences.ts";
import {
  eventually,
  insertAccount,
  insertMessages,
  nextTestId,
  testMessage,
} from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const logger = pino({ level: "silent" });
const fixture = useTestStore();
const PRICE = 1_000_000;

/** The simulator, with the moment each part was handed to it (performance.now()). */
class RecordingCarrier implements Carrier {
  readonly name = "recording";
  readonly submitted: { to: string; messageId: number; at: number }[] = [];
  constructor(private readonly inner: SimulatorCarrier) {}
  get limits() {
    return this.inner.limits;
  }
  async submit(parts: readonly CarrierPart[]): Promise<SubmitResult[]> {
    const at = performance.now();
    for (const p of parts) this.submitted.push({ to: p.to, messageId: p.messageId, at });
    return this.inner.submit(parts);
  }
  start(handler: ReceiptHandler) {
    return this.inner.start(handler);
  }
  stop() {
    return this.inner.stop();
  }
}

let rules: OptOutRules;
let carrier: RecordingCarrier;
let worker: DeliveryWorker;
let stops: StopFeed;

beforeAll(async () => {
  const { store } = fixture;
  // As an instance runs it (app.ts): a STOP waits only for claims this worker has not yet been
  // told of, and the worker holds back what its screen saw before the STOP.
  stops = new StopFeed({ db: store.db, instanceId: "opt-out-worker", pollMs: 20 });
  // The replies' ids from the sequence, far from the fixtures' own.
  await store.counters.updateOne({ _id: "message" }, { $set: { seq: 10_000_000 } });
  rules = new OptOutRules({
    store,
    optOuts: openOptOuts(store.db),
    messageIds: new IdAllocator(store.counters, "message", 20),
    pricePerPartMicros: PRICE,
    onQueued: async (accountId, deliveryAt, acceptedAt) => {
      await markLanesDue(
        store.lanes,
        new Map([[accountId, { delivery: deliveryAt, notify: acceptedAt }]]),
      );
      worker?.wake();
    },
  });
  carrier = new RecordingCarrier(
    new SimulatorCarrier({
      db: store.db,
      // Submissions take a while and few fit at once: a STOP often comes while claimed messages
      // are under way or wait for room.
      sendDelayMs: 15,
      window: 2,
      receiptDelayMs: 20,
      pollIntervalMs: 20,
      instanceId: "opt-out-sim",
      collectionName: "opt_out_receipts",
    }),
  );
  worker = new DeliveryWorker({
    store,
    carrier,
    logger,
    instanceId: "opt-out-worker",
    pollIntervalMs: 20,
    screen: (messages) => rules.screen(messages),
    stops,
  });
  await stops.start();
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await stops?.stop();
});

let nextNumber = 1000;
const newNumber = () => `+4917000${nextNumber++}`;
const ACCOUNT_NUMBER = "+4930123456";

function inboundWord(accountId: string, from: string, text: string): InboundForOptOut {
  return { _id: 5_000_000 + nextTestId(), accountId, from, to: ACCOUNT_NUMBER, text };
}

const messagesTo = (accountId: string, to: string) =>
  fixture.store.messages.find({ accountId, to: { $in: [to, to.slice(1)] } }).toArray();

const creditOf = async (accountId: string) =>
  (await fixture.store.accounts.findOne({ _id: accountId }))?.creditMicros;

const isFinal = (doc: MessageDoc) => !["ACCEPTED", "SENT"].includes(doc.status);

describe("a handset's words", () => {
  it("STOP opts out, is kept with its inbound message and answered once per 5 minutes, free and delivered", async () => {
    const account = await insertAccount(fixture.store);
    const handset = newNumber();
    const stop = inboundWord(account._id, handset, " Stop! ");
    await rules.applyInbound(stop);
    // The carrier delivered it again: one change, one reply.
    await rules.applyInbound(stop);
    await rules.applyInbound(inboundWord(account._id, handset, "UNSUBSCRIBE"));
    const optOuts = openOptOuts(fixture.store.db);
    const entry = await optOuts.optOuts.findOne({ _id: optOutId(optOutKey(account._id, handset)) });
    expect(entry).toMatchObject({ source: "KEYWORD", keyword: "Stop!", inboundId: stop._id });
    const changes = await optOuts.changes.find({ accountId: account._id }).toArray();
    expect(changes.map((c) => [c.action, c.inboundId])).toEqual([["ADDED", stop._id]]);

    const replies = await messagesTo(account._id, handset);
    expect(replies).toHaveLength(1);
    expect(replies[0]).toMatchObject({
      from: ACCOUNT_NUMBER,
      to: handset,
      keywordReply: "STOP",
    });
    expect(replies[0]?.text).toMatch(/START/);
    // Not charged, and it passes the block it confirms.
    expect(await creditOf(account._id)).toBe(0);
    await eventually(
      async () => (await messagesTo(account._id, handset))[0]?.status === "DELIVERED",
    );
  });

  it("START lifts the STOP and is answered; HELP is answered with the account's own text", async () => {
    const account = await insertAccount(fixture.store);
    await fixture.store.accounts.updateOne(
      { _id: account._id },
      { $set: { keywordReplies: { HELP: "Shop help: call 0800 123" } } },
    );
    const handset = newNumber();
    await rules.applyInbound(inboundWord(account._id, handset, "STOP"));
    const start = inboundWord(account._id, handset, "start");
    await rules.applyInbound(start);
    expect(await rules.refusedAmong(account._id, [handset])).toEqual(new Set());
    await rules.applyInbound(inboundWord(account._id, handset, "help"));
    // An ordinary answer changes nothing and is not answered.
    await rules.applyInbound(inboundWord(account._id, handset, "STOP PLEASE"));
    expect(await rules.refusedAmong(account._id, [handset])).toEqual(new Set());
    const replies = await messagesTo(account._id, handset);
    expect(replies.map((m) => [m.keywordReply, m.text.slice(0, 10)])).toEqual([
      ["STOP", "test: you "],
      ["START", "test: you "],
      ["HELP", "Shop help:"],
    ]);
    const changes = await openOptOuts(fixture.store.db)
      .changes.find({ accountId: account._id }, { sort: { at: 1, _id: 1 } })
      .toArray();
    expect(changes.map((c) => [c.action, c.source])).toEqual([
      ["ADDED", "KEYWORD"],
      ["REMOVED", "KEYWORD"],
    ]);
    expect(changes[1]?.inboundId).toBe(start._id);
  });

  it("a handset's STOP takes over the account's own entry: the account cannot remove it any more", async () => {
    const account = await insertAccount(fixture.store);
    const handset = newNumber();
    await rules.add(account._id, handset, { source: "API" });
    await rules.applyInbound(inboundWord(account._id, handset, "STOP"));
    expect(await rules.remove(account._id, handset, ["API"], { source: "API" })).toBe(
      "not-removable",
    );
  });
});

describe("messages accepted before the opt-out", () => {
  it("are withdrawn: SEND_ERROR with its webhook, credit given back once, never at the carrier", async () => {
    const account = await insertAccount(fixture.store);
    const handset = newNumber();
    const other = newNumber();
    // Due in an hour: the worker leaves them alone meanwhile.
    const docs0 = [
      testMessage(account._id, handset),
      testMessage(account._id, handset.slice(1), { parts: 2 }),
      testMessage(account._id, other),
    ].map((m) => ({
      ...acceptedMessage(m, new Date()),
      deliveryAt: new Date(Date.now() + 3600_000),
    }));
    await fixture.store.messages.insertMany(docs0);
    const ids = docs0.map((d) => d._id);
    await rules.applyInbound(inboundWord(account._id, handset, "STOP"));
    const docs = await fixture.store.messages.find({ _id: { $in: ids } }).toArray();
    const byId = new Map(docs.map((d) => [d._id, d]));
    for (const id of ids.slice(0, 2)) {
      const doc = byId.get(id);
      expect(doc?.status).toBe("SEND_ERROR");
      expect(doc?.sendError).toBe(OPTED_OUT_ERROR);
      expect(doc?.notifications.map((n) => n.status)).toEqual(["ACCEPTED", "SEND_ERROR"]);
      expect(doc?.deliveryAt).toBeUndefined();
    }
    expect(byId.get(ids[2] ?? 0)?.status).toBe("ACCEPTED");
    // 1 + 2 parts refunded, nothing left pending.
    const after = await fixture.store.accounts.findOne({ _id: account._id });
    expect(after?.creditMicros).toBe(3 * PRICE);
    expect(after?.pendingCharges).toEqual([]);
    // The withdrawn messages never reach the carrier (the STOP's own reply does: by id, not number).
    const withdrawn = new Set(ids.slice(0, 2));
    expect(carrier.submitted.filter((s) => withdrawn.has(s.messageId))).toEqual([]);
  });

  it("the worker's check after its claim withdraws what reached the list after acceptance", async () => {
    const account = await insertAccount(fixture.store);
    const handset = newNumber();
    // On the list without the withdrawal that follows an opt-out (as if the STOP came between
    // the send's check and its claim).
    await openOptOuts(fixture.store.db).optOuts.insertOne({
      _id: optOutId(optOutKey(account._id, handset)),
      ...optOutKey(account._id, handset),
      source: "API",
      createTime: new Date(),
    });
    const [id] = await insertMessages(fixture.store, [testMessage(account._id, handset)]);
    worker.wake();
    await eventually(async () => {
      const doc = await fixture.store.messages.findOne({ _id: id });
      return doc?.status === "SEND_ERROR";
    });
    const doc = await fixture.store.messages.findOne({ _id: id });
    expect(doc?.sendError).toBe(OPTED_OUT_ERROR);
    expect(doc?.carrierIds).toBeUndefined();
    expect(carrier.submitted.filter((s) => s.messageId === id)).toEqual([]);
    // The refund is settled right after the status change.
    await eventually(async () => (await creditOf(account._id)) === PRICE);
    const after = await fixture.store.accounts.findOne({ _id: account._id });
    expect(after?.pendingCharges).toEqual([]);
  });
});

describe("a STOP racing sends", () => {
  it("nothing reaches the carrier once the STOP is acknowledged", async () => {
    const account = await insertAccount(fixture.store);
    const rounds = Array.from({ length: 12 }, () => newNumber());
    const PER_ROUND = 20;
    const acks = new Map<string, number>();
    await Promise.all(
      rounds.map(async (handset, round) => {
        const sends = (async () => {
          for (let k = 0; k < PER_ROUND; k++) {
            await insertMessages(fixture.store, [testMessage(account._id, handset)]);
            worker.wake();
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
        })();
        const stop = (async () => {
          // Once the carrier has this number's first message, others are claimed and waiting.
          while (!carrier.submitted.some((s) => s.to === handset)) {
            await new Promise((resolve) => setTimeout(resolve, 2));
          }
          await new Promise((resolve) => setTimeout(resolve, (round * 3) % 17));
          await rules.applyInbound(inboundWord(account._id, handset, "STOP"));
          // deliver_sm_resp would be sent now.
          acks.set(handset, performance.now());
        })();
        await Promise.all([sends, stop]);
      }),
    );
    // Whatever was not withdrawn goes out and ends.
    await eventually(async () => {
      const docs = await fixture.store.messages
        .find({ accountId: account._id, keywordReply: { $exists: false } })
        .toArray();
      return docs.length === rounds.length * PER_ROUND && docs.every(isFinal);
    }, 30_000);
    let sent = 0;
    let withdrawn = 0;
    for (const handset of rounds) {
      const ack = acks.get(handset) ?? 0;
      const late = carrier.submitted.filter(
        (s) => s.to.replace(/^\+?/, "+") === handset && s.at >= ack,
      );
      // Replies to the STOP are the only ones allowed through.
      const lateIds = new Set(late.map((s) => s.messageId));
      const lateDocs = await fixture.store.messages.find({ _id: { $in: [...lateIds] } }).toArray();
      expect(
        lateDocs.filter((d) => d.keywordReply === undefined).map((d) => d._id),
        handset,
      ).toEqual([]);
      for (const doc of await messagesTo(account._id, handset)) {
        if (doc.keywordReply) continue;
        if (doc.status === "SEND_ERROR") withdrawn++;
        else sent++;
      }
    }
    // Both happened: the race was a race.
    expect(withdrawn).toBeGreaterThan(0);
    expect(sent).toBeGreaterThan(0);
    expect(sent + withdrawn).toBe(rounds.length * PER_ROUND);
    expect(await creditOf(account._id)).toBe(withdrawn * PRICE);
  }, 60_000);
});
