import { type CommandStartedEvent, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptOutReads } from "../../src/store/opt-out-reads.ts";
import { addOptOut, type OptOutStore, openOptOuts } from "../../src/store/opt-outs.ts";
import { type TestDatabase, testDatabase, testServer } from "../support/database.ts";

let base: TestDatabase;
let monitored: MongoClient;
let store: OptOutStore;
const finds: CommandStartedEvent[] = [];

beforeAll(async () => {
  base = await testDatabase({ label: "opt_out_reads" });
  monitored = new MongoClient(testServer().uri, { monitorCommands: true });
  await monitored.connect();
  monitored.on("commandStarted", (event) => {
    if (event.commandName === "find" && event.command.find === "optOuts") finds.push(event);
  });
  store = openOptOuts(monitored.db(base.name));
  const now = new Date();
  for (const [accountId, number] of [
    ["acc-a", "+4915100000001"],
    ["acc-a", "+4915100000003"],
    ["acc-b", "+4915100000002"],
  ] as const) {
    await addOptOut(store, { accountId, number }, { source: "API" }, now);
  }
});
afterAll(async () => {
  await monitored?.close();
  await base?.close();
});

const numberOf = (i: number) => `+49151000000${String(i).padStart(2, "0")}`;

describe("grouped opt-out reads of single sends", () => {
  it("answers each send for its own account only, in fewer reads than sends", async () => {
    const reads = new OptOutReads(store);
    finds.length = 0;
    const asks = Array.from({ length: 60 }, (_, i) => ({
      accountId: i % 2 === 0 ? "acc-a" : "acc-b",
      number: numberOf(i % 5),
    }));
    const answers = await Promise.all(
      asks.map((ask) => reads.among(ask.accountId, [ask.number], { maxTimeMS: 10_000 })),
    );
    asks.forEach((ask, i) => {
      const listed =
        (ask.accountId === "acc-a" && (ask.number === numberOf(1) || ask.number === numberOf(3))) ||
        (ask.accountId === "acc-b" && ask.number === numberOf(2));
      expect([...(answers[i] as Set<string>)]).toEqual(listed ? [ask.number] : []);
    });
    // The first read goes at once; the rest wait for it and share the next ones.
    expect(finds.length).toBeGreaterThan(0);
    expect(finds.length).toBeLessThanOrEqual(3);
  });

  it("finds a number written without its +, as its canonical form", async () => {
    const reads = new OptOutReads(store);
    const found = await reads.among("acc-b", ["4915100000002"], { maxTimeMS: 10_000 });
    expect([...found]).toEqual(["+4915100000002"]);
  });

  it("reads a batch's many numbers on their own, one $in", async () => {
    const reads = new OptOutReads(store);
    finds.length = 0;
    const numbers = Array.from({ length: 100 }, (_, i) => numberOf(i));
    const found = await reads.among("acc-a", numbers, { maxTimeMS: 10_000 });
    expect([...found].sort()).toEqual([numberOf(1), numberOf(3)]);
    expect(finds).toHaveLength(1);
  });

  it("refuses a read whose time ran out while it waited, without reading for it", async () => {
    const reads = new OptOutReads(store);
    finds.length = 0;
    const first = reads.among("acc-a", [numberOf(1)], { maxTimeMS: 10_000 });
    const second = reads.among("acc-a", [numberOf(2)], { maxTimeMS: 10_000 });
    const late = reads.among("acc-a", [numberOf(3)], { maxTimeMS: 0 });
    await expect(late).rejects.toThrow("did not answer in time");
    expect([...(await first)]).toEqual([numberOf(1)]);
    expect([...(await second)]).toEqual([]);
    for (const find of finds) {
      expect(JSON.stringify(find.command.filter)).not.toContain(numberOf(3));
    }
  });
});
