/**
 * Fairness and isolation of the notifier, end to end on the test database with real receivers on
 * loopback (issue 9, part 2): an account with a backlog does not hold back one with a few
 * notifications; a hanging receiver slows only its own notifications, not another path on the same
 * host and port; requests in flight per account and per receiver stay within their bounds, seen
 * at the receiver; claims stay alive while their notifications wait or a receiver is slow (no
 * duplicates, two instances included); a claim taken over is neither renewed nor recorded.
 * Assertions are on counts and order, never on how long something took.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { markLanesDue } from "../../src/scheduling/lanes.ts";
import type { NewMessage } from "../../src/store/messages.ts";
import { changeStatus } from "../../src/store/status-changes.ts";
import {
  eventually,
  insertAccount,
  insertMessages as insertMessagesInto,
  testMessage,
} from "../support/fixtures.ts";
import { testNotifiers } from "../support/notifiers.ts";
import { useTestStore } from "../support/store.ts";
import { countsByNotification, type GatedReceiver, startGatedReceiver } from "./gated-receiver.ts";

const fixture = useTestStore();
const notifiers = testNotifiers(() => fixture.store, { timeoutMs: 60_000 });
const receivers: GatedReceiver[] = [];

afterEach(async () => {
  for (const r of receivers) r.release();
  await notifiers.stopAll();
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

const notifier = notifiers.make;

async function receiver(options: Parameters<typeof startGatedReceiver>[0]) {
  const r = await startGatedReceiver(options);
  receivers.push(r);
  return r;
}

function insertMessages(accountId: string, count: number, extra: Partial<NewMessage> = {}) {
  return insertMessagesInto(
    fixture.store,
    Array.from({ length: count }, () => testMessage(accountId, "+4915112345678", extra)),
  );
}

/** Messages whose every notification is no longer pending. */
async function allSettled(ids: number[]): Promise<boolean> {
  const docs = await fixture.store.messages
    .find({ _id: { $in: ids } }, { projection: { notifications: 1 } })
    .toArray();
  return (
    docs.length === ids.length &&
    docs.every((d) => d.notifications.every((n) => n.state !== "pending"))
  );
}

const exactlyOnce = (counts: Map<string, number>) => [...counts.values()].every((n) => n === 1);

describe("fair notification between accounts", () => {
  it("sends a small account's notifications within the first rounds, not after a backlog", async () => {
    const r = await receiver({ behaviour: () => undefined });
    const big = await insertAccount(fixture.store, `${r.baseUrl}/big`);
    const small = await insertAccount(fixture.store, `${r.baseUrl}/small`);
    // The backlog is older: oldest first over all accounts would send every one of it first.
    const backlog = await insertMessagesInto(
      fixture.store,
      Array.from({ length: 150 }, () => testMessage(big._id, "+4915112345678")),
      new Date(Date.now() - 60_000),
    );
    const few = await insertMessages(small._id, 4);
    const n = notifier("fair", { concurrency: 1, chunkSize: 10 });
    await n.start();
    await eventually(() => allSettled([...backlog, ...few]), 60_000);

    const order = r.requests.map((q) => q.path);
    expect(order).toHaveLength(154);
    const lastSmall = order.lastIndexOf("/small");
    // Round robin in rounds of ten: the four are out within the first two rounds' requests.
    expect(lastSmall).toBeLessThan(20);
    expect(exactlyOnce(countsByNotification(r.requests))).toBe(true);
  }, 120_000);
});

describe("isolation of receivers and accounts", () => {
  it("a hanging receiver slows only its own notifications, within the account's and receiver's bounds", async () => {
    // Account A's three receivers hang; account C's receiver is another path on the same host and port.
    const r = await receiver({
      behaviour: (path) => (path.startsWith("/a") ? { hang: true } : undefined),
      group: (path) => (path.startsWith("/a") ? "A" : "C"),
    });
    const a = await insertAccount(fixture.store, `${r.baseUrl}/a1`);
    const c = await insertAccount(fixture.store, `${r.baseUrl}/c`);
    const aIds = [
      ...(await insertMessages(a._id, 15)),
      ...(await insertMessages(a._id, 15, { statusCallback: `${r.baseUrl}/a2` })),
      ...(await insertMessages(a._id, 15, { statusCallback: `${r.baseUrl}/a3` })),
    ];
    const cIds = await insertMessages(c._id, 40);
    const n = notifier("isolation", {
      concurrency: 10,
      receiverConcurrency: 2,
      accountConcurrency: 3,
      accountClaimLimit: 12,
      // A's claims come in due order, /a1's first: what waits for a saturated receiver goes back
      // soon, so that A's other receivers get their share of its claims.
      receiverWaitMs: 300,
      deferMs: 300,
    });
    let mostLeased = 0;
    const sampling = setInterval(() => {
      void fixture.store.messages
        .countDocuments({ _id: { $in: aIds }, "notifyLease.owner": { $exists: true } })
        .then((count) => {
          mostLeased = Math.max(mostLeased, count);
        });
    }, 50);
    try {
      await n.start();
      await eventually(() => allSettled(cIds), 60_000);
      await eventually(async () => r.inFlight("A") === 3, 60_000);

      // Every one of C's notifications arrived while A's receivers still held all of A's requests.
      expect(r.requests.filter((q) => q.path === "/c")).toHaveLength(40);
      const aRequests = r.requests.filter((q) => q.path.startsWith("/a"));
      expect(aRequests.every((q) => q.answered === 0)).toBe(true);
      // A's requests in flight never exceeded its bound, nor any of its receivers' (seen there).
      // (Held requests never end: each one made is one in flight.)
      expect(r.maxInFlight("A")).toBe(3);
      expect(aRequests.length).toBe(3);
      for (const path of ["/a1", "/a2", "/a3"]) {
        expect(aRequests.filter((q) => q.path === path).length).toBeLessThanOrEqual(2);
      }
      expect(new Set(aRequests.map((q) => q.path)).size).toBeGreaterThan(1);
      expect(r.maxInFlight("C")).toBeLessThanOrEqual(2);
      // No more of A's notifications claimed here than its bound.
      expect(mostLeased).toBeLessThanOrEqual(12);

      r.release();
      await eventually(() => allSettled(aIds), 60_000);
    } finally {
      clearInterval(sampling);
    }
    expect(r.maxInFlight("A")).toBe(3);
    const counts = countsByNotification(r.requests);
    expect(counts.size).toBe(aIds.length + cIds.length);
    expect(exactlyOnce(counts)).toBe(true);
  }, 120_000);

  it("puts work for a saturated receiver back after a while, and sends it once the receiver recovers", async () => {
    const r = await receiver({
      behaviour: (path) => (path === "/stuck" ? { hang: true } : undefined),
    });
    const a = await insertAccount(fixture.store, `${r.baseUrl}/stuck`);
    const ids = await insertMessages(a._id, 20);
    const n = notifier("put-back", {
      concurrency: 10,
      receiverConcurrency: 2,
      receiverWaitMs: 300,
      deferMs: 200,
    });
    await n.start();
    await eventually(async () => n.stats().deferred >= 18, 30_000);
    expect(r.requests).toHaveLength(2);
    r.release();
    await eventually(() => allSettled(ids), 60_000);
    const counts = countsByNotification(r.requests);
    expect(counts.size).toBe(20);
    expect(exactlyOnce(counts)).toBe(true);
  }, 120_000);
});

describe("claims stay alive", () => {
  it("a slow receiver gets each notification once, with short leases and two instances", async () => {
    const r = await receiver({ behaviour: () => ({ delayMs: 1_500 }) });
    const account = await insertAccount(fixture.store, `${r.baseUrl}/slow`);
    const ids = await insertMessages(account._id, 10);
    // Each message's next status is known before the first is sent: it follows under the claim.
    const now = new Date();
    await changeStatus(fixture.store.messages, ids, ["ACCEPTED"], { status: "SENT" }, now);
    await markLanesDue(fixture.store.lanes, new Map([[account._id, { notify: now }]]));
    // Leases of 600 ms; answers take 1.5 s and at most 3 requests run per instance: most work
    // waits here, for seconds.
    const options = { concurrency: 3, receiverConcurrency: 3, leaseMs: 600 };
    const first = notifier("lease-1", options);
    const second = notifier("lease-2", options);
    await first.start();
    await second.start();
    await eventually(() => allSettled(ids), 90_000);

    const counts = countsByNotification(r.requests);
    expect(counts.size).toBe(ids.length * 2);
    expect(exactlyOnce(counts)).toBe(true);
    for (const id of ids) {
      expect(r.requests.filter((q) => q.id === String(id)).map((q) => q.status)).toEqual([
        "ACCEPTED",
        "SENT",
      ]);
    }
    expect(first.stats().delivered + second.stats().delivered).toBe(ids.length * 2);
  }, 120_000);

  it("neither renews nor records a claim another instance took over", async () => {
    const r = await receiver({ behaviour: () => ({ delayMs: 2_500 }) });
    const account = await insertAccount(fixture.store, `${r.baseUrl}/taken`);
    const [id] = (await insertMessages(account._id, 1)) as [number];
    const n = notifier("taken", { leaseMs: 600 });
    await n.start();
    await eventually(async () => r.requests.length === 1, 30_000);
    // Another instance took the claim over (as if this one's lease had run out).
    const until = new Date(Date.now() + 3_600_000);
    await fixture.store.messages.updateOne(
      { _id: id },
      { $set: { notifyLease: { owner: "elsewhere:1", until }, notifyAt: until } },
    );
    await eventually(async () => r.requests[0]?.answered === 200, 30_000);
    await n.stop();

    const doc = await fixture.store.messages.findOne({ _id: id });
    expect(doc?.notifyLease).toEqual({ owner: "elsewhere:1", until });
    expect(doc?.notifyAt).toEqual(until);
    expect(doc?.notifications[0]?.state).toBe("pending");
    expect(doc?.notifications[0]?.attempts).toHaveLength(0);
    expect(n.stats().delivered).toBe(1);
  }, 120_000);
});
