/**
 * An account's own webhooks take turns (issue 38), end to end on the test database with a real
 * HTTP receiver on loopback: behind the account's 10000-message batch and its 30000 webhooks (to
 * its status URL), a single send, a 5-message batch and a single send whose receiver fails twice,
 * each with a URL of its own, have their webhooks in their turn: the single send's and the small
 * batch's among the first turns' requests, the retries at their time, all of them before the big
 * batch's end; in order per message and each once. Before, the account's lane was claimed in due
 * order: the small batch and the retries came after the whole batch. Assertions are on order and
 * counts, never on how long something took.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StatusName } from "../../src/domain/message-status.ts";
import type { NewMessage } from "../../src/store/messages.ts";
import { changeStatus } from "../../src/store/status-changes.ts";
import { commitBatch } from "../support/batches.ts";
import { insertAccount, insertMessages, nextTestId, testMessage } from "../support/fixtures.ts";
import { testNotifiers } from "../support/notifiers.ts";
import { useTestStore } from "../support/store.ts";
import {
  type ReceivedRequest,
  startWebhookReceiver,
  type WebhookReceiver,
} from "../support/webhook-receiver.ts";

const fixture = useTestStore();
const notifiers = testNotifiers(() => fixture.store);
let receiver: WebhookReceiver;
let failingAnswers = 0;

beforeAll(async () => {
  receiver = await startWebhookReceiver({
    // The twice-failing receiver: its first two requests are answered 500.
    respond: ({ path }) => (path === "/failing" && ++failingAnswers <= 2 ? 500 : undefined),
  });
});
afterAll(async () => {
  await notifiers.stopAll();
  await receiver?.close();
});

const STATUSES: StatusName[] = ["ACCEPTED", "SENT", "DELIVERED"];
const BIG = 10_000;

/** Stores messages as accepted, then SENT and DELIVERED: three notifications each, in order. */
async function sent(messages: NewMessage[], batchId?: number): Promise<number[]> {
  const ids = await insertMessages(fixture.store, messages);
  if (batchId !== undefined) await commitBatch(fixture.store, batchId, messages[0]?.accountId);
  const now = new Date();
  await changeStatus(fixture.store.messages, ids, ["ACCEPTED"], { status: "SENT" }, now);
  await changeStatus(fixture.store.messages, ids, ["SENT"], { status: "DELIVERED" }, now);
  return ids;
}

describe("an account's webhooks take turns", () => {
  it("a single send, a small batch and a retry behind the account's 10000-message batch", async () => {
    const url = (path: string) => `${receiver.baseUrl}${path}`;
    const account = await insertAccount(fixture.store, url("/big"));
    const message = (i: number, extra: Partial<NewMessage> = {}) =>
      testMessage(account._id, `+4915140${String(100_000 + i)}`, extra);
    const bigBatch = nextTestId();
    await sent(
      Array.from({ length: BIG }, (_, i) => message(i, { batchId: bigBatch })),
      bigBatch,
    );
    const [single] = await sent([message(1, { statusCallback: url("/single") })]);
    const smallBatch = nextTestId();
    const small = await sent(
      Array.from({ length: 5 }, (_, i) =>
        message(i, { batchId: smallBatch, statusCallback: url("/small") }),
      ),
      smallBatch,
    );
    const [failing] = await sent([message(2, { statusCallback: url("/failing") })]);
    const expected = 3 * (BIG + 1 + 5 + 1);

    await notifiers.make("turns").start();
    await receiver.waitFor((requests) => succeeded(requests).length >= expected, 240_000);

    const arrived = succeeded(receiver.requests);
    expect(arrived).toHaveLength(expected);
    // Each webhook once.
    expect(new Set(arrived.map((r) => `${r.query.id}:${r.query.status}`)).size).toBe(expected);
    // In order per message.
    const statusesOf = new Map<string, string[]>();
    for (const r of arrived) {
      const list = statusesOf.get(r.query.id ?? "") ?? [];
      list.push(r.query.status ?? "");
      statusesOf.set(r.query.id ?? "", list);
    }
    for (const list of statusesOf.values()) expect(list).toEqual(STATUSES);

    // Where each arrived among every request (failed attempts included).
    const all = receiver.requests;
    const lastAt = (path: string) => all.findLastIndex((r) => r.path === path);
    const bigDone = lastAt("/big");
    /** Requests of the big batch before the given request. */
    const bigBefore = (index: number) =>
      all.slice(0, index).filter((r) => r.path === "/big").length;
    // The single send and the small batch: every webhook within the first turns' requests (a
    // turn claims up to 512 messages, 1536 webhooks of the batch), far before the batch's end.
    expect(bigBefore(lastAt("/single"))).toBeLessThan(3 * BIG * 0.2);
    expect(bigBefore(lastAt("/small"))).toBeLessThan(3 * BIG * 0.2);
    // The twice-failing receiver: three attempts at ACCEPTED, the third (and the message's other
    // webhooks) at their time, before the batch's end and before half of its webhooks.
    const attempts = all.filter((r) => r.path === "/failing");
    expect(attempts.map((r) => [r.query.status, r.answered])).toEqual([
      ["ACCEPTED", 500],
      ["ACCEPTED", 500],
      ["ACCEPTED", 200],
      ["SENT", 200],
      ["DELIVERED", 200],
    ]);
    expect(bigBefore(lastAt("/failing"))).toBeLessThan(3 * BIG * 0.5);
    for (const path of ["/single", "/small", "/failing"])
      expect(lastAt(path)).toBeLessThan(bigDone);
    // Every message of the small batch, the single send and the failing one was notified whole.
    for (const id of [single, ...small, failing])
      expect(statusesOf.get(String(id))).toEqual(STATUSES);
  }, 300_000);
});

function succeeded(requests: readonly ReceivedRequest[]): ReceivedRequest[] {
  return requests.filter((r) => r.answered >= 200 && r.answered < 300);
}

describe("a retry at its time", () => {
  it("goes out when it is due, not at the next periodic wake-up", async () => {
    const failing = await startWebhookReceiver({ failFirst: 1 });
    try {
      const account = await insertAccount(fixture.store, `${failing.baseUrl}/once`);
      await insertMessages(fixture.store, [testMessage(account._id, "+4915140999999")]);
      // The periodic wake-up would come only after a minute: the retry's own alarm sends it.
      await notifiers
        .make("alarm", { retrySchedule: [300], sweepIntervalMs: 60_000, overdueSweepMs: 60_000 })
        .start();
      await failing.waitFor((requests) => requests.length >= 2, 20_000);
      expect(failing.requests.map((r) => r.answered)).toEqual([500, 200]);
    } finally {
      await failing.close();
    }
  }, 60_000);
});
