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
import { BatchCommits } from "../../src/store/batch-commits.ts";
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
