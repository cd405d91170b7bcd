/**
 * Turns between one account's batches (scheduling/batch-turns.ts) on a real database: a turn's
 * share is dealt between the account's due batches and interleaved, work ranked before them keeps
 * its place, and with less share than batches they take the turns in rotation.
 */
import { type CommandStartedEvent, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ClaimedMessage,
  claimDueDeliveries,
  DELIVERY_QUEUE,
} from "../../src/delivery/delivery-claims.ts";
import { BatchTurns } from "../../src/scheduling/batch-turns.ts";
import { BatchCommits } from "../../src/store/batch-commits.ts";
import type { MessageDoc } from "../../src/store/documents.ts";
import { commitBatch } from "../support/batches.ts";
import { testServer } from "../support/database.ts";
import { insertMessages, nextTestId, testMessage } from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
let runs = 0;
/** The same database through a client that reports its commands: a turn's reads are counted. */
let monitored: MongoClient;
const messageReads: CommandStartedEvent[] = [];
beforeAll(async () => {
  monitored = new MongoClient(testServer().uri, { monitorCommands: true });
  await monitored.connect();
  monitored.on("commandStarted", (event) => {
    if (event.commandName === "find" && event.command.find === "messages") messageReads.push(event);
  });
});
afterAll(() => monitored?.close());

/** A committed batch of `count` messages of `account`, accepted `agoMs` ago; its message ids. */
async function batch(account: string, count: number, agoMs: number): Promise<Set<number>> {
  const batchId = nextTestId();
  const ids = await insertMessages(
    fixture.store,
    Array.from({ length: count }, (_, i) =>
      testMessage(account, `+4915140${String(100_000 + i)}`, { batchId }),
    ),
    new Date(Date.now() - agoMs),
  );
  await commitBatch(fixture.store, batchId, account);
  return new Set(ids);
}

function claimer(account: string) {
  const messages = monitored.db(fixture.store.messages.dbName).collection<MessageDoc>("messages");
  const turns = new BatchTurns(messages, DELIVERY_QUEUE);
  const commits = new BatchCommits(fixture.store.batches);
  let seq = 0;
  return (limit: number): Promise<ClaimedMessage[]> =>
    claimDueDeliveries(fixture.store.messages, {
      now: fixture.store.clock.now(),
      limit,
      leaseMs: 60_000,
      token: `turns-${account}-${++seq}`,
      commits,
      filter: { accountId: account },
      candidates: (read) => turns.candidates(account, read),
    });
}

/** Which of the named groups each message belongs to. */
function groupsOf(messages: ClaimedMessage[], groups: Record<string, Set<number>>): string[] {
  return messages.map((m) => Object.entries(groups).find(([, ids]) => ids.has(m._id))?.[0] ?? "?");
}

describe("an account's batches take turns", () => {
  it("deals a turn between the due batches, interleaved, after the work ranked before them", async () => {
    const account = `turns-${++runs}`;
    const a = await batch(account, 20, 3_000);
    const b = await batch(account, 3, 2_000);
    const c = await batch(account, 20, 1_000);
    // A single send ranks two minutes ahead of the batches accepted with it: it goes first.
    const [single] = await insertMessages(fixture.store, [testMessage(account, "+4915149999999")]);
    const claim = claimer(account);

    const first = await claim(10);
    expect(groupsOf(first, { a, b, c, single: new Set([single as number]) })).toEqual([
      "single",
      ...["a", "b", "c", "a", "b", "c", "a", "b", "c"],
    ]);
    // b is done: a and c share the next turn; what b would have had goes to the oldest batch.
    const second = await claim(10);
    const groups = groupsOf(second, { a, c });
    expect(groups.filter((g) => g === "a")).toHaveLength(5);
    expect(groups.filter((g) => g === "c")).toHaveLength(5);
  });

  it("with one message a turn, each batch has its turn in rotation", async () => {
    const account = `turns-${++runs}`;
    const a = await batch(account, 5, 3_000);
    const b = await batch(account, 5, 2_000);
    const c = await batch(account, 5, 1_000);
    const claim = claimer(account);
    const served: string[] = [];
    for (let turn = 0; turn < 9; turn++) served.push(...groupsOf(await claim(1), { a, b, c }));
    expect(served).toEqual(["a", "b", "c", "a", "b", "c", "a", "b", "c"]);
  });

  it("a batch alone is claimed in its order", async () => {
    const account = `turns-${++runs}`;
    const a = await batch(account, 8, 1_000);
    const claimed = await claimer(account)(5);
    const order = [...a].slice(0, 5);
    expect(claimed.map((m) => m._id)).toEqual(order);
  });

  it("a small batch after a big one: the turn has both in two reads, the small one whole", async () => {
    const account = `turns-${++runs}`;
    const big = await batch(account, 20, 3_000);
    const small = await batch(account, 2, 2_000);
    const smaller = await batch(account, 1, 1_000);
    const claim = claimer(account);
    messageReads.length = 0;
    const claimed = await claim(10);
    // The head and the account's latest messages; no seek for the groups between, no group read.
    expect(messageReads).toHaveLength(2);
    expect(groupsOf(claimed, { big, small, smaller })).toEqual([
      ...["big", "small", "smaller", "big", "small", "big"],
      ...["big", "big", "big", "big"],
    ]);
    // In their own order within each batch.
    const ids = claimed.map((m) => m._id);
    expect(ids.filter((id) => small.has(id))).toEqual([...small]);
    expect(ids.filter((id) => big.has(id))).toEqual([...big].slice(0, 7));
  });
});
