import { type Collection, type CommandStartedEvent, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addOptOut, type OptOutStore, openOptOuts } from "../../src/opt-outs/list.ts";
import { OptOutReads } from "../../src/opt-outs/list-reads.ts";
import { openStore } from "../../src/store/database.ts";
import type { AccountDoc } from "../../src/store/documents.ts";
import { type TestDatabase, testDatabase, testServer } from "../support/database.ts";

let base: TestDatabase;
let monitored: MongoClient;
let store: OptOutStore;
let accounts: Collection<AccountDoc>;
const finds: CommandStartedEvent[] = [];

beforeAll(async () => {
  base = await testDatabase({ label: "opt_out_reads" });
  monitored = new MongoClient(testServer().uri, { monitorCommands: true });
  await monitored.connect();
  monitored.on("commandStarted", (event) => {
    if (event.commandName === "find" && event.command.find === "optOuts") finds.push(event);
  });
  store = openOptOuts(monitored.db(base.name));
  accounts = openStore(monitored.db(base.name)).accounts;
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
    const reads = new OptOutReads(store, accounts);
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
    const reads = new OptOutReads(store, accounts);
    const found = await reads.among("acc-b", ["4915100000002"], { maxTimeMS: 10_000 });
    expect([...found]).toEqual(["+4915100000002"]);
  });

  it("reads a batch's many numbers on their own, one $in", async () => {
    const reads = new OptOutReads(store, accounts);
    finds.length = 0;
    const numbers = Array.from({ length: 100 }, (_, i) => numberOf(i));
    const found = await reads.among("acc-a", numbers, { maxTimeMS: 10_000 });
    expect([...found].sort()).toEqual([numberOf(1), numberOf(3)]);
    expect(finds).toHaveLength(1);
  });

  it("refuses a read whose time ran out while it waited, without reading for it", async () => {
    const reads = new OptOutReads(store, accounts);
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

describe("sends of an account whose list is empty", () => {
  const sendTo = { maxTimeMS: 10_000 };
  /** Checks until the background probe has answered (it follows the first check). */
  async function probed(reads: OptOutReads, accountId: string) {
    for (let i = 0; i < 200; i++) {
      const check = await reads.checkSend(accountId, numberOf(1), sendTo);
      if (check.listVersion !== undefined || i > 20) return check;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error("never probed");
  }

  it("read nothing once the list is found empty, and carry the version it was empty at", async () => {
    await accounts.insertOne(accountDoc("acc-empty"));
    const reads = new OptOutReads(store, accounts);
    expect(await probed(reads, "acc-empty")).toEqual({ optedOut: false, listVersion: 0 });
    finds.length = 0;
    const checks = await Promise.all(
      Array.from({ length: 10 }, (_, i) => reads.checkSend("acc-empty", numberOf(i), sendTo)),
    );
    expect(checks).toEqual(Array.from({ length: 10 }, () => ({ optedOut: false, listVersion: 0 })));
    expect(finds).toHaveLength(0);
  });

  it("on a list with entries: a listed number is read every time, one not listed once per version", async () => {
    await accounts.insertOne(accountDoc("acc-a"));
    const reads = new OptOutReads(store, accounts);
    expect(await probed(reads, "acc-a")).toEqual({ optedOut: true });
    finds.length = 0;
    expect(await reads.checkSend("acc-a", numberOf(2), sendTo)).toEqual({
      optedOut: false,
      listVersion: 0,
    });
    expect(finds).toHaveLength(1);
    expect(await reads.checkSend("acc-a", numberOf(2), sendTo)).toEqual({
      optedOut: false,
      listVersion: 0,
    });
    expect(finds).toHaveLength(1);
    expect(await reads.checkSend("acc-a", numberOf(3), sendTo)).toEqual({ optedOut: true });
    expect(await reads.checkSend("acc-a", numberOf(3), sendTo)).toEqual({ optedOut: true });
    expect(finds).toHaveLength(3);
    // An addition raises the version; once the writer's debit finds that, the number is read again.
    await addOptOut(
      store,
      { accountId: "acc-a", number: numberOf(2) },
      { source: "API" },
      new Date(),
    );
    await accounts.updateOne({ _id: "acc-a" }, { $inc: { optOutsVersion: 1 } });
    reads.forget("acc-a");
    finds.length = 0;
    expect(await reads.checkSend("acc-a", numberOf(2), sendTo)).toEqual({ optedOut: true });
    // (Beside the account's new probe.)
    expect(finds.filter((find) => "_id" in find.command.filter)).toHaveLength(1);
  });

  it("once forgotten (the writer found the version moved), the next probe takes the new version", async () => {
    await accounts.insertOne(accountDoc("acc-moved"));
    const reads = new OptOutReads(store, accounts);
    expect((await probed(reads, "acc-moved")).listVersion).toBe(0);
    await accounts.updateOne({ _id: "acc-moved" }, { $inc: { optOutsVersion: 1 } });
    // Until told, the state probed stands (the writer's debit is what notices the change).
    expect((await reads.checkSend("acc-moved", numberOf(1), sendTo)).listVersion).toBe(0);
    reads.forget("acc-moved");
    expect(await reads.checkSend("acc-moved", numberOf(1), sendTo)).toEqual({ optedOut: false });
    expect((await probed(reads, "acc-moved")).listVersion).toBe(1);
  });
});

function accountDoc(id: string): AccountDoc {
  return {
    _id: id,
    name: id,
    secretHash: "unused",
    webhookSecret: "unused",
    creditMicros: 0,
    pendingCharges: [],
    createdAt: new Date(),
  };
}
