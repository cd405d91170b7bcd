/**
 * Turns within an account's notify turn (notifier/notify-turns.ts) on a real database: a turn is
 * dealt between the account's groups (each batch, the single sends of a class to a receiver, the
 * retries) and interleaved, the head's first group first; an account with one group costs one
 * round trip as before; with more groups than a turn takes they have turns in rotation; and a
 * message moves into its retries' group while a retry waits, back after it, and out of every group
 * once its final status is notified; such an account is claimed for again sooner than one whose
 * work is one group (a sixteenth of its claim limit free, not a quarter).
 */
import { type CommandStartedEvent, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { notifyGroupOf, retryGroupOf } from "../../src/domain/notify-groups.ts";
import { ClaimBudget } from "../../src/notifier/claim-budget.ts";
import { claimDueNotifications, type NotifyingMessage } from "../../src/notifier/claiming.ts";
import { recordNotificationOutcomes } from "../../src/notifier/notification-records.ts";
import { MAX_GROUPS, NotifyTurns } from "../../src/notifier/notify-turns.ts";
import { attemptOutcome, planNotification } from "../../src/notifier/outcomes.ts";
import { BatchCommits } from "../../src/store/batch-commits.ts";
import type { MessageDoc } from "../../src/store/documents.ts";
import type { NewMessage } from "../../src/store/messages.ts";
import { changeStatus } from "../../src/store/status-changes.ts";
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

/** Messages of `account` accepted `agoMs` ago; their ids. */
async function messages(
  account: string,
  count: number,
  agoMs: number,
  extra: Partial<NewMessage> = {},
): Promise<Set<number>> {
  const ids = await insertMessages(
    fixture.store,
    Array.from({ length: count }, (_, i) =>
      testMessage(account, `+4915140${String(100_000 + i)}`, extra),
    ),
    new Date(Date.now() - agoMs),
  );
  return new Set(ids);
}

/** A committed batch of `count` messages of `account`, accepted `agoMs` ago; its message ids. */
async function batch(account: string, count: number, agoMs: number, statusCallback?: string) {
  const batchId = nextTestId();
  const ids = await messages(account, count, agoMs, {
    batchId,
    ...(statusCallback && { statusCallback }),
  });
  await commitBatch(fixture.store, batchId, account);
  return ids;
}

function claimer(account: string) {
  const collection = monitored.db(fixture.store.messages.dbName).collection<MessageDoc>("messages");
  const turns = new NotifyTurns(collection);
  const commits = new BatchCommits(fixture.store.batches);
  let seq = 0;
  return async (limit: number): Promise<{ token: string; claimed: NotifyingMessage[] }> => {
    const token = `nturns-${account}-${++seq}`;
    const claimed = await claimDueNotifications(fixture.store.messages, {
      now: fixture.store.clock.now(),
      limit,
      leaseMs: 60_000,
      token,
      commits,
      filter: { accountId: account },
      candidates: (read) => turns.candidates(account, read),
    });
    return { token, claimed };
  };
}

/** Which of the named groups each message belongs to. */
function groupsOf(messages: { _id: number }[], groups: Record<string, Set<number>>): string[] {
  return messages.map((m) => Object.entries(groups).find(([, ids]) => ids.has(m._id))?.[0] ?? "?");
}

/** Records each claimed message's first pending notification as answered `httpStatus`. */
async function answer(claimed: NotifyingMessage[], token: string, httpStatus: number) {
  const now = new Date();
  const outcomes = claimed.map((message) => {
    const plan = planNotification(
      message,
      { _id: message.accountId, statusUrl: "http://receiver.test/hook", webhookSecret: "" },
      token,
      now,
      true,
    );
    if (!("send" in plan)) throw new Error(`message ${message._id} has nothing to send`);
    return attemptOutcome(
      plan.send,
      { httpStatus, durationMs: 1, ...(httpStatus >= 300 && { error: "HTTP 500" }) },
      now,
      [0, 60_000],
      now,
    );
  });
  await recordNotificationOutcomes(fixture.store.messages, outcomes, now);
}

const stored = async (id: number) => {
  const doc = await fixture.store.messages.findOne({ _id: id });
  if (!doc) throw new Error(`message ${id} is gone`);
  return doc;
};

describe("an account's notifications take turns", () => {
  it("deals a turn between a big batch, a small batch, single sends and a retry, interleaved", async () => {
    const account = `nturns-${++runs}`;
    const big = await batch(account, 40, 5_000);
    const small = await batch(account, 3, 4_000, "http://small.test/hook");
    // A retry of one of the big batch's messages, due now (its first attempt failed at once).
    const claim = claimer(account);
    const { token, claimed } = await claim(1);
    expect(groupsOf(claimed, { big })).toEqual(["big"]);
    await answer(claimed, token, 500);
    const retry = new Set(claimed.map((m) => m._id));
    // Single sends rank two minutes ahead: their group is the head's first, it goes first.
    const single = await messages(account, 2, 3_000, { statusCallback: "http://single.test/a" });

    // A turn of 24: each group up to 3 (a turn of 8 groups' share), the rest from the head.
    const first = await claim(24);
    // The retry first: its message is one of the big batch's.
    const names = groupsOf(first.claimed, { retry, big, small, single });
    expect(names.slice(0, 4).sort()).toEqual(["big", "retry", "single", "small"]);
    expect(names[0]).toBe("single");
    expect(names.filter((g) => g === "small")).toHaveLength(3);
    expect(names.filter((g) => g === "single")).toHaveLength(2);
    expect(names.filter((g) => g === "retry")).toHaveLength(1);
    expect(names.filter((g) => g === "big")).toHaveLength(18);
    // Each group in its own order.
    const ids = first.claimed.map((m) => m._id);
    expect(ids.filter((id) => small.has(id))).toEqual([...small]);
    expect(ids.filter((id) => big.has(id) && !retry.has(id))).toEqual(
      [...big].filter((id) => !retry.has(id)).slice(0, 18),
    );
  });

  it("an account with one group: the turn is its head, read beside two seeks", async () => {
    const account = `nturns-${++runs}`;
    const a = await batch(account, 20, 1_000);
    messageReads.length = 0;
    const { claimed } = await claimer(account)(5);
    expect(claimed.map((m) => m._id)).toEqual([...a].slice(0, 5));
    // The head and the first and last group keys, at once; no group read, no further seek.
    expect(messageReads).toHaveLength(3);
  });

  it("with more groups than a turn takes, each has its turn in rotation", async () => {
    const account = `nturns-${++runs}`;
    const count = MAX_GROUPS + 4;
    const groups: Record<string, Set<number>> = {};
    for (let i = 0; i < count; i++) groups[`g${i}`] = await batch(account, 3, 10_000 - i * 100);
    const claim = claimer(account);
    const served = new Set<string>();
    for (let turn = 0; turn < 3; turn++)
      for (const name of groupsOf((await claim(MAX_GROUPS + 1)).claimed, groups)) served.add(name);
    expect(served.size).toBe(count);
  });
});

describe("a message's group", () => {
  it("is its retries' group while a retry waits, its own after, none once its final status is notified", async () => {
    const account = `nturns-${++runs}`;
    const [id] = [...(await messages(account, 1, 0, { statusCallback: "http://x.test/h?o=1" }))];
    const own = notifyGroupOf({
      accountId: account,
      deliveryClass: "single",
      statusCallback: "http://x.test/h",
    });
    expect((await stored(id as number)).notifyGroup).toBe(own);
    const claim = claimer(account);

    let turn = await claim(1);
    await answer(turn.claimed, turn.token, 500); // retried at once (schedule [0, 60 s])
    expect((await stored(id as number)).notifyGroup).toBe(retryGroupOf(own));
    // Two more statuses queue behind the ACCEPTED notification.
    const now = new Date();
    await changeStatus(
      fixture.store.messages,
      [id as number],
      ["ACCEPTED"],
      { status: "SENT" },
      now,
    );
    await changeStatus(
      fixture.store.messages,
      [id as number],
      ["SENT"],
      { status: "DELIVERED" },
      now,
    );
    turn = await claim(1);
    await answer(turn.claimed, turn.token, 200); // ACCEPTED, at its second attempt
    expect((await stored(id as number)).notifyGroup).toBe(own);
    turn = await claim(1);
    await answer(turn.claimed, turn.token, 200); // SENT
    expect((await stored(id as number)).notifyGroup).toBe(own);
    turn = await claim(1);
    await answer(turn.claimed, turn.token, 200); // DELIVERED, the final status
    const done = await stored(id as number);
    expect(done.notifyGroup).toBeUndefined();
    expect(done.notifyAt).toBeUndefined();
  });
});

describe("the claim budget of an account whose work takes turns", () => {
  const budget = () =>
    new ClaimBudget({ maxInFlight: 4096, chunkSize: 512, accountClaimLimit: 512 });
  const holding = (b: ClaimBudget, account: string, n: number) => {
    for (let i = 0; i < n; i++) b.take(account);
  };

  it("is claimed for again once a sixteenth of its limit is free, others once a quarter is", () => {
    const b = budget();
    holding(b, "turns", 512 - 100);
    holding(b, "plain", 512 - 100);
    const room = b.round((account) => account === "turns");
    expect([...(room?.skip ?? [])]).toEqual(["plain"]);
    expect(room?.room("turns")).toBe(100);
    holding(b, "turns", 90);
    expect([...(b.round((account) => account === "turns")?.skip ?? [])].sort()).toEqual([
      "plain",
      "turns",
    ]);
  });

  it("an account found with several groups is one whose work takes turns, one with one group is not", async () => {
    const account = `nturns-${++runs}`;
    const collection = fixture.store.messages;
    const turns = new NotifyTurns(collection);
    await batch(account, 10, 2_000);
    const read = (limit: number) =>
      turns.candidates(account, {
        filter: { accountId: account },
        projection: { _id: 1 },
        limit,
        now: fixture.store.clock.now(),
      });
    await read(5);
    expect(turns.takesTurns(account)).toBe(false);
    await batch(account, 2, 1_000);
    await read(5);
    expect(turns.takesTurns(account)).toBe(true);
  });
});
