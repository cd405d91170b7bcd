/**
 * Account lanes on a real database (scheduling/lanes.ts): turns least recently served first, across
 * instances; settling never idles a lane that got work after its turn; marks coalesce.
 */
import { type CommandStartedEvent, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FairLanes, type LaneDoc, LaneMarker } from "../../src/scheduling/lanes.ts";
import { ServerClock } from "../../src/store/server-clock.ts";
import { testServer } from "../support/database.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
// The lanes writes of this file's database, seen by the driver's command monitoring.
let monitored: MongoClient;
const laneWrites: CommandStartedEvent[] = [];
beforeAll(async () => {
  monitored = new MongoClient(testServer().uri, { monitorCommands: true });
  await monitored.connect();
  monitored.on("commandStarted", (event) => {
    if (event.commandName === "update" && event.command.update === "lanes") laneWrites.push(event);
  });
});
afterAll(() => monitored?.close());
let run = 0;
const keys = (...names: string[]) => {
  run++;
  return names.map((n) => `${n}-${run}`);
};

describe("fair lanes", () => {
  it("takes turns least recently served first, each lane once per round of every due lane", async () => {
    const [a, b, c] = keys("a", "b", "c") as [string, string, string];
    const lanes = new FairLanes(fixture.store.lanes, "delivery", fixture.store.clock);
    await lanes.markDue([a, b, c], new Date(Date.now() - 1000));
    const served: string[] = [];
    for (let round = 0; round < 6; round++) {
      const [turn] = await lanes.takeTurns(1, new Set(served.length > 100 ? [] : []));
      if (turn && [a, b, c].includes(turn.key)) served.push(turn.key);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const mine = served.filter((k) => [a, b, c].includes(k));
    // every lane before any lane twice
    expect(new Set(mine.slice(0, 3)).size).toBe(3);
    expect(new Set(mine.slice(3, 6)).size).toBe(3);
  });

  it("a second instance takes the other lanes first (the turn order is in the database)", async () => {
    const [a, b] = keys("a", "b") as [string, string];
    const one = new FairLanes(fixture.store.lanes, "notify", fixture.store.clock);
    const two = new FairLanes(fixture.store.lanes, "notify", new ServerClock(fixture.store.db));
    await one.markDue([a, b], new Date(Date.now() - 1000));
    const skip = new Set<string>();
    const [first] = await one.takeTurns(1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const [second] = await two.takeTurns(1, skip);
    expect(first?.key).not.toBe(second?.key);
    expect([first?.key, second?.key].sort()).toEqual([a, b].sort());
  });

  it("turns found with their stamp beside the claims are served once it lands", async () => {
    const [a, b] = keys("a", "b") as [string, string];
    const lanes = new FairLanes(fixture.store.lanes, "delivery", fixture.store.clock);
    await lanes.markDue([a, b], new Date(Date.now() - 1000));
    // Never served: the two come before every lane served before.
    const first = await lanes.findTurns(1);
    const taken = first.turns[0]?.key;
    expect([a, b]).toContain(taken);
    await first.stamped;
    const second = await lanes.findTurns(1);
    expect(second.turns.map((t) => t.key)).toEqual([taken === a ? b : a]);
    await second.stamped;
  });

  it("settling idles a lane, unless work was marked after its turn was taken", async () => {
    const [quiet, busy] = keys("quiet", "busy") as [string, string];
    const lanes = new FairLanes(fixture.store.lanes, "delivery", fixture.store.clock);
    await lanes.markDue([quiet, busy], new Date(Date.now() - 1000));
    const turns = await lanes.takeTurns(10);
    const turnOf = (key: string) => turns.find((t) => t.key === key);
    expect(turnOf(quiet)).toBeDefined();
    expect(turnOf(busy)).toBeDefined();
    // work arrives for `busy` while its turn found nothing
    await lanes.markDue([busy], new Date());
    await lanes.settle(turnOf(quiet) as never, undefined);
    await lanes.settle(turnOf(busy) as never, undefined);
    const due = (await lanes.takeTurns(10)).map((t) => t.key);
    expect(due).toContain(busy);
    expect(due).not.toContain(quiet);
    // a lane settled with later work is due then, not before
    const [later] = keys("later");
    await lanes.markDue([later as string], new Date(Date.now() - 1000));
    const [turn] = (await lanes.takeTurns(10)).filter((t) => t.key === later);
    await lanes.settle(turn as never, new Date(Date.now() + 60_000));
    expect((await lanes.takeTurns(10)).map((t) => t.key)).not.toContain(later);
    const doc = await fixture.store.lanes.findOne({ _id: later as string });
    expect(doc?.delivery?.dueAt?.getTime()).toBeGreaterThan(Date.now());
  });

  it("marks coalesce: one write per account and queue, at the earliest time marked", async () => {
    const [x] = keys("x") as [string];
    const marker = new LaneMarker(fixture.store.lanes);
    const early = new Date(Date.now() - 5000);
    marker.mark(x, "delivery", new Date());
    marker.mark(x, "delivery", early);
    marker.mark(x, "notify", new Date());
    await marker.flush();
    const doc = await fixture.store.lanes.findOne({ _id: x });
    expect(doc?.delivery?.dueAt?.getTime()).toBe(early.getTime());
    expect(doc?.delivery?.version).toBe(1);
    expect(doc?.notify?.version).toBe(1);
  });

  it("the sends of one group, answered by the same reply, mark their lanes in one write", async () => {
    const [a, b] = keys("a", "b") as [string, string];
    // The marker writes through the monitored client, to this file's database.
    const lanes = monitored.db(fixture.store.db.databaseName).collection<LaneDoc>("lanes");
    const marker = new LaneMarker(lanes);
    let reply!: () => void;
    const stored = new Promise<void>((resolve) => {
      reply = resolve;
    });
    // As the message writer answers a group: every send resumes on the same reply, then marks
    // its account's lanes and waits for them before its answer.
    const sends = [a, a, b, a, b].map(async (key, i) => {
      await stored;
      // A send's own steps between its answer and its marks, more for some than for others.
      for (let step = 0; step < i; step++) await Promise.resolve();
      marker.mark(key, "delivery", new Date());
      marker.mark(key, "notify", new Date());
      await marker.flush();
    });
    const before = laneWrites.length;
    reply();
    await Promise.all(sends);
    expect(laneWrites.length - before).toBe(1);
    expect(laneWrites.at(-1)?.command.updates).toHaveLength(2);
    for (const key of [a, b]) {
      const doc = await fixture.store.lanes.findOne({ _id: key });
      expect(doc?.delivery?.version).toBe(1);
      expect(doc?.notify?.version).toBe(1);
    }
  });
});

describe("server clock", () => {
  it("an instance whose own clock is minutes off still reads the server's time", async () => {
    const fast = new ServerClock(fixture.store.db, () => Date.now() + 180_000);
    const slow = new ServerClock(fixture.store.db, () => Date.now() - 180_000);
    expect(Math.abs(fast.nowMs() - Date.now())).toBeGreaterThan(100_000); // before measuring
    await fast.sync();
    await slow.sync();
    expect(fast.synced && slow.synced).toBe(true);
    // the database runs on this machine: the server's time is this machine's time
    expect(Math.abs(fast.nowMs() - Date.now())).toBeLessThan(1000);
    expect(Math.abs(slow.nowMs() - Date.now())).toBeLessThan(1000);
    expect(Math.abs(fast.nowMs() - slow.nowMs())).toBeLessThan(1000);
  });
});
