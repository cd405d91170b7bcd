/**
 * Fair claims of notifications by account lane, the overdue sweep, and the renewal of claimed
 * work's leases, against the test database (no HTTP).
 */
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  claimDueNotifications,
  NotificationClaimer,
  type NotificationClaimerOptions,
} from "../../src/notifier/claiming.ts";
import { resolveNotifierOptions } from "../../src/notifier/options.ts";
import { DEFAULT_LEASE_MS } from "../../src/scheduling/lease-keeper.ts";
import { BatchCommits } from "../../src/store/batch-commits.ts";
import { ServerClock } from "../../src/store/server-clock.ts";
import { changeStatus } from "../../src/store/status-changes.ts";
import { commitBatch } from "../support/batches.ts";
import { insertMessages, testMessage } from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
const logger = pino({ level: "silent" });
const claimers: NotificationClaimer[] = [];

// Lanes are per database: every test starts from none.
beforeEach(async () => {
  await fixture.store.messages.deleteMany({});
  await fixture.store.lanes.deleteMany({});
});
afterEach(async () => {
  await Promise.all(claimers.splice(0).map((c) => c.stop()));
});

function claimer(options: Partial<NotificationClaimerOptions> = {}): NotificationClaimer {
  const c = new NotificationClaimer({
    store: fixture.store,
    commits: new BatchCommits(fixture.store.batches),
    logger,
    instanceId: "claims",
    leaseMs: 60_000,
    lanesPerRound: 32,
    laneParallelism: 4,
    ...options,
  });
  claimers.push(c);
  return c;
}

let accounts = 0;
/** `count` messages of a new account, their ACCEPTED notification due `agoMs` ago. */
async function account(count: number, agoMs: number): Promise<{ id: string; ids: number[] }> {
  const id = `lane-${++accounts}`;
  const at = new Date(Date.now() - agoMs);
  const ids = await insertMessages(
    fixture.store,
    Array.from({ length: count }, () => testMessage(id, "+4915112345678")),
    at,
  );
  await fixture.store.messages.updateMany({ _id: { $in: ids } }, { $set: { notifyAt: at } });
  return { id, ids };
}

const unlimited = () => Number.MAX_SAFE_INTEGER;
const byAccount = (messages: { accountId: string }[], accountId: string) =>
  messages.filter((m) => m.accountId === accountId).length;

describe("fair claims by account lane", () => {
  it("gives an account with one notification due the same turn as one with a backlog", async () => {
    const big = await account(60, 120_000);
    const small = await account(2, 0);
    const c = claimer();
    await c.lanes.markDue([big.id, small.id], fixture.store.clock.now());

    const first = await c.claimRound(10, unlimited, new Set());
    // Oldest first over all accounts would have taken ten of the backlog and none of the others.
    expect(byAccount(first.messages, small.id)).toBe(2);
    expect(byAccount(first.messages, big.id)).toBe(5);
    expect(first.accounts).toBeDefined();

    // The small lane was settled (due when its claims' leases end): the next round is the
    // backlog's alone.
    const second = await c.claimRound(10, unlimited, new Set());
    expect(byAccount(second.messages, big.id)).toBe(10);
    expect(byAccount(second.messages, small.id)).toBe(0);
    const lane = await fixture.store.lanes.findOne({ _id: small.id });
    expect(lane?.notify?.dueAt?.getTime()).toBeGreaterThan(Date.now());
  });

  it("serves lanes least recently served first, and a skipped lane keeps its place", async () => {
    const a = await account(20, 60_000);
    const b = await account(20, 60_000);
    const d = await account(20, 60_000);
    const c = claimer();
    await c.lanes.markDue([a.id, b.id, d.id], fixture.store.clock.now());

    // One lane per round (limit 1): each account in turn, never the same twice in a row.
    const served: string[] = [];
    for (let round = 0; round < 6; round++) {
      const claimed = await c.claimRound(1, unlimited, new Set([a.id]));
      served.push(...claimed.messages.map((m) => m.accountId));
    }
    expect(served).toHaveLength(6);
    expect(served.filter((x) => x === b.id)).toHaveLength(3);
    expect(served.filter((x) => x === d.id)).toHaveLength(3);
    // `a` was skipped all along (its account at its bound here): it is first when it may be served.
    const next = await c.claimRound(1, unlimited, new Set());
    expect(next.messages.map((m) => m.accountId)).toEqual([a.id]);
  });

  it("caps a lane's share by the room its account has left", async () => {
    const a = await account(20, 1_000);
    const c = claimer();
    await c.lanes.markDue([a.id], fixture.store.clock.now());
    const round = await c.claimRound(10, () => 3, new Set());
    expect(round.messages).toHaveLength(3);
    expect(round.more).toBe(true);
  });

  it("repairs a lane that was never marked with the overdue sweep", async () => {
    const lost = await account(3, 30_000);
    const fresh = await account(3, 0);
    await fixture.store.lanes.deleteMany({}); // as if the producers had crashed before marking
    const c = claimer();
    expect((await c.claimRound(10, unlimited, new Set())).messages).toHaveLength(0);

    expect(await c.repairLanes(5_000)).toBeGreaterThanOrEqual(1);
    const round = await c.claimRound(10, unlimited, new Set());
    expect(byAccount(round.messages, lost.id)).toBe(3);
    // Work due for less than the grace is left to its producer's mark.
    expect(byAccount(round.messages, fresh.id)).toBe(0);
  });
});

describe("claimed work's leases", () => {
  it("are renewed until released, and never for a claim another instance took over", async () => {
    const a = await account(3, 1_000);
    const c = claimer({ leaseMs: 1_500 });
    c.start();
    await c.lanes.markDue([a.id], fixture.store.clock.now());
    const round = await c.claimRound(10, unlimited, new Set());
    expect(round.messages).toHaveLength(3);
    const [kept, released, taken] = round.messages.map((m) => m._id) as [number, number, number];
    const farAway = new Date(Date.now() + 3_600_000);
    await fixture.store.messages.updateOne(
      { _id: taken },
      { $set: { notifyLease: { owner: "other:1", until: farAway }, notifyAt: farAway } },
    );
    c.release(released, round.token);

    // More than two lease lengths later: only the held claim is still this instance's, and alive.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    const docs = new Map(
      (await fixture.store.messages.find({ _id: { $in: [kept, released, taken] } }).toArray()).map(
        (d) => [d._id, d],
      ),
    );
    const now = Date.now();
    expect(docs.get(kept)?.notifyLease?.owner).toBe(round.token);
    expect(docs.get(kept)?.notifyLease?.until.getTime()).toBeGreaterThan(now);
    expect(docs.get(kept)?.notifyAt?.getTime()).toBeGreaterThan(now);
    expect(docs.get(released)?.notifyLease?.until.getTime()).toBeLessThanOrEqual(now);
    expect(docs.get(taken)?.notifyLease).toEqual({ owner: "other:1", until: farAway });
    expect(docs.get(taken)?.notifyAt).toEqual(farAway);

    // The released one ran out: anyone may claim it again; the kept one, nobody.
    const again = await claimDueNotifications(fixture.store.messages, {
      now: new Date(),
      limit: 10,
      leaseMs: 60_000,
      token: "late:1",
      commits: new BatchCommits(fixture.store.batches),
      filter: { accountId: a.id },
    });
    expect(again.map((m) => m._id)).toEqual([released]);
  });
});

describe("a dead notifier's claims", () => {
  it("are taken over once its short lease runs out; a live notifier's are not", async () => {
    const lease = 800;
    const deadAccount = await account(3, 1_000);
    const liveAccount = await account(3, 1_000);
    const dead = claimer({ instanceId: "dead", leaseMs: lease });
    const live = claimer({ instanceId: "live", leaseMs: lease });
    live.start();
    await dead.lanes.markDue([deadAccount.id, liveAccount.id], fixture.store.clock.now());
    // Each takes one account's lane (the other skipped), then the first dies: never renewed.
    const deadRound = await dead.claimRound(10, unlimited, new Set([liveAccount.id]));
    const liveRound = await live.claimRound(10, unlimited, new Set([deadAccount.id]));
    expect(deadRound.messages.map((m) => m._id).sort()).toEqual(deadAccount.ids.sort());
    expect(liveRound.messages.map((m) => m._id).sort()).toEqual(liveAccount.ids.sort());
    await dead.stop();

    // A survivor keeps claiming: it gets the dead one's work after its lease (a generous bound),
    // never the live one's, whose slow receiver holds it for many leases.
    const survivor = claimer({ instanceId: "survivor", leaseMs: lease });
    survivor.start();
    const taken: number[] = [];
    const started = Date.now();
    while (taken.length < deadAccount.ids.length && Date.now() - started < 15_000) {
      const round = await survivor.claimRound(10, unlimited, new Set());
      taken.push(...round.messages.map((m) => m._id));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(taken.sort()).toEqual(deadAccount.ids.sort());
    await new Promise((resolve) => setTimeout(resolve, 3 * lease));
    const late = await survivor.claimRound(10, unlimited, new Set());
    expect(late.messages).toHaveLength(0);
    const held = await fixture.store.messages.find({ _id: { $in: liveAccount.ids } }).toArray();
    for (const doc of held) expect(doc.notifyLease?.owner).toBe(liveRound.token);
  });

  it("come back with its delivery claims under the defaults", async () => {
    const { leaseMs } = resolveNotifierOptions({
      store: fixture.store,
      logger,
      instanceId: "defaults",
    });
    const a = await account(2, 1_000);
    const dead = claimer({ instanceId: "dead-default", leaseMs });
    await dead.lanes.markDue([a.id], fixture.store.clock.now());
    expect((await dead.claimRound(10, unlimited, new Set())).messages).toHaveLength(2);
    await dead.stop();
    // An instance that looks a delivery lease (and a second) later, as a survivor would, finds a
    // crashed instance's deliveries due again: its notifications too.
    const later = new ServerClock(fixture.store.db, () => Date.now() + DEFAULT_LEASE_MS + 1_000);
    const again = await claimDueNotifications(fixture.store.messages, {
      now: later.now(),
      limit: 10,
      leaseMs,
      token: "survivor-default:1",
      commits: new BatchCommits(fixture.store.batches),
      filter: { accountId: a.id },
    });
    expect(again.map((m) => m._id).sort()).toEqual(a.ids.sort());
  });
});

describe("priority of webhooks within an account", () => {
  it("an OTP message's notifications are claimed before the account's older batch backlog, a single send's before the batch's", async () => {
    const account = `prio-${Date.now()}`;
    const now = Date.now();
    const batch = Array.from({ length: 60 }, (_, i) =>
      testMessage(account, `+4915100001${String(i).padStart(3, "0")}`, {
        batchId: 77,
        deliveryClass: "batch",
      }),
    );
    const single = testMessage(account, "+4915100002000", { deliveryClass: "single" });
    const otp = testMessage(account, "+4915100003000", { deliveryClass: "otp" });
    await insertMessages(fixture.store, batch, new Date(now - 5000));
    await commitBatch(fixture.store, 77, account);
    await insertMessages(fixture.store, [single], new Date(now - 1000));
    await insertMessages(fixture.store, [otp], new Date(now));
    // The SENT notification of the OTP, due now: still ahead of the batch's older ones.
    await fixture.store.messages.updateOne(
      { _id: otp.id },
      { $set: { "notifications.0.state": "delivered" }, $unset: { notifyAt: "" } },
    );
    await changeStatus(
      fixture.store.messages,
      [otp.id],
      ["ACCEPTED"],
      { status: "SENT" },
      new Date(),
      { classes: new Map([[otp.id, "otp"]]) },
    );
    const claimed = await claimDueNotifications(fixture.store.messages, {
      now: new Date(),
      limit: 3,
      leaseMs: 10_000,
      token: `prio-${now}`,
      commits: new BatchCommits(fixture.store.batches),
      filter: { accountId: account },
    });
    expect(claimed.map((m) => m._id).slice(0, 2)).toEqual([otp.id, single.id]);
    expect(batch.map((m) => m.id)).toContain(claimed[2]?._id);
    expect(claimed[0]?.notifications.map((n) => n.status)).toEqual(["ACCEPTED", "SENT"]);
  });
});
