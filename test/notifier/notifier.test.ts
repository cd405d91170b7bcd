/**
 * The notifier against a real database and real HTTP receivers on loopback: retries and giving up,
 * order per message, skipped notifications, two instances, a restart that resumes from the stored
 * change-stream token, private-address protection, a slow receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RESUME_TOKEN_KEY } from "../../src/notifier/resume-token.ts";
import { verifyWebhookSignature } from "../../src/notifier/signature.ts";
import { markLanesDue } from "../../src/scheduling/lanes.ts";
import type { MessageDoc } from "../../src/store/documents.ts";
import type { NewMessage } from "../../src/store/messages.ts";
import { changeStatus } from "../../src/store/status-changes.ts";
import {
  insertAccount as insertAccountInto,
  insertMessages as insertMessagesInto,
  testMessage,
} from "../support/fixtures.ts";
import { testNotifiers } from "../support/notifiers.ts";
import { useTestStore } from "../support/store.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

const fixture = useTestStore();
let receiver: WebhookReceiver;
const notifiers = testNotifiers(() => fixture.store);

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await notifiers.stopAll();
  await receiver?.close();
});

const insertAccount = (statusUrl?: string) => insertAccountInto(fixture.store, statusUrl);

async function insertMessages(
  accountId: string,
  count: number,
  extra: Partial<NewMessage> = {},
): Promise<number[]> {
  const messages = Array.from({ length: count }, () =>
    testMessage(accountId, "+15550001111", { text: "hi", ...extra }),
  );
  return insertMessagesInto(fixture.store, messages);
}

const notifier = notifiers.make;

async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function settled(ids: number[]): Promise<boolean> {
  const docs = await fixture.store.messages
    .find({ _id: { $in: ids } }, { projection: { notifications: 1 } })
    .toArray();
  return (
    docs.length === ids.length &&
    docs.every((d) => d.notifications.every((n) => n.state !== "pending"))
  );
}

/** A status change, and its accounts' notify lanes marked due, as the delivery worker does. */
async function statusChange(
  ids: number[],
  from: MessageDoc["status"][],
  change: Parameters<typeof changeStatus>[3],
): Promise<void> {
  const now = new Date();
  await changeStatus(fixture.store.messages, ids, from, change, now);
  const accounts = await fixture.store.messages.distinct("accountId", { _id: { $in: ids } });
  await markLanesDue(fixture.store.lanes, new Map(accounts.map((a) => [a, { notify: now }])));
}

async function doc(id: number | undefined): Promise<MessageDoc> {
  const found = await fixture.store.messages.findOne({ _id: id as number });
  if (!found) throw new Error(`message ${id} not found`);
  return found;
}

const received = (path: string, id: number) =>
  receiver.requests.filter((r) => r.path === path && r.query.id === String(id));

describe("notifier", () => {
  it("retries a failing receiver on the schedule, in order, with a stable webhook-id", async () => {
    const account = await insertAccount(`${receiver.baseUrl}/retry`);
    const [id] = await insertMessages(account._id, 1);
    let failures = 0;
    receiver.set({
      respond: (r) =>
        r.path === "/retry" && r.query.status === "ACCEPTED" && failures++ < 2 ? 503 : undefined,
    });
    await statusChange([id as number], ["ACCEPTED"], { status: "SENT" });
    const n = notifier("retry");
    await n.start();
    await eventually(() => settled([id as number]));
    await n.stop();
    const got = received("/retry", id as number);
    expect(got.map((r) => [r.query.status, r.answered])).toEqual([
      ["ACCEPTED", 503],
      ["ACCEPTED", 503],
      ["ACCEPTED", 200],
      ["SENT", 200],
    ]);
    expect(new Set(got.slice(0, 3).map((r) => r.headers["webhook-id"])).size).toBe(1);
    for (const r of got) {
      expect(
        verifyWebhookSignature({
          secret: account.webhookSecret,
          headers: r.headers,
          pathAndQuery: r.pathAndQuery,
        }),
      ).toBe(true);
    }
    const stored = await doc(id);
    expect(stored.notifications[0]?.state).toBe("delivered");
    expect(stored.notifications[0]?.attempts.map((a) => a.httpStatus)).toEqual([503, 503, 200]);
    expect(stored.notifications[0]?.attempts[0]?.error).toBe("HTTP 503");
    expect(stored.notifications[1]?.attempts.map((a) => a.httpStatus)).toEqual([200]);
    expect(stored.notifyAt).toBeUndefined();
    receiver.set({ respond: undefined });
  });

  it("gives up after the schedule and goes on with the next status; skips without a URL", async () => {
    const account = await insertAccount(`${receiver.baseUrl}/down`);
    const silent = await insertAccount();
    const [id] = await insertMessages(account._id, 1);
    const [unheard] = await insertMessages(silent._id, 1);
    receiver.set({
      respond: (r) => (r.path === "/down" && r.query.status === "ACCEPTED" ? 500 : undefined),
    });
    await statusChange([id as number, unheard as number], ["ACCEPTED"], { status: "SENT" });
    const n = notifier("give-up");
    await n.start();
    await eventually(() => settled([id as number, unheard as number]));
    await n.stop();
    expect(received("/down", id as number).map((r) => r.query.status)).toEqual([
      "ACCEPTED",
      "ACCEPTED",
      "ACCEPTED",
      "SENT",
    ]);
    const stored = await doc(id);
    expect(stored.notifications.map((x) => x.state)).toEqual(["gave_up", "delivered"]);
    expect(stored.notifications[0]?.attempts).toHaveLength(3);
    const skipped = await doc(unheard);
    expect(skipped.notifications.map((x) => x.state)).toEqual(["skipped", "skipped"]);
    expect(receiver.requests.some((r) => r.query.id === String(unheard))).toBe(false);
    receiver.set({ respond: undefined });
  });

  it("skips every status already known of a message without a URL under one claim", async () => {
    const silent = await insertAccount();
    const [id] = await insertMessages(silent._id, 1);
    await statusChange([id as number], ["ACCEPTED"], { status: "SENT" });
    await statusChange([id as number], ["SENT"], { status: "DELIVERED" });
    const n = notifier("skip-known");
    await n.start();
    await eventually(() => settled([id as number]));
    await n.stop();
    expect((await doc(id)).notifications.map((x) => x.state)).toEqual([
      "skipped",
      "skipped",
      "skipped",
    ]);
    expect(n.stats()).toMatchObject({ skipped: 3, claimed: 1 });
  });

  it("two instances deliver each notification exactly once between them", async () => {
    const account = await insertAccount(`${receiver.baseUrl}/pair`);
    // Each instance holds at most 20 of the account's notifications, and the receiver takes 20 ms
    // over each: one instance alone cannot drain the 450 before the other's next sweep.
    receiver.set({ delayMs: 20 });
    const pair = { concurrency: 8, chunkSize: 20, accountClaimLimit: 20 };
    const a = notifier("pair-a", pair);
    const b = notifier("pair-b", pair);
    await a.start();
    await b.start();
    const ids = await insertMessages(account._id, 150);
    await statusChange(ids, ["ACCEPTED"], { status: "SENT" });
    await statusChange(ids.slice(0, 75), ["SENT"], { status: "DELIVERED" });
    await statusChange(ids.slice(75), ["SENT"], {
      status: "DELIVERY_ERROR",
      reason: "Unreachable",
    });
    await eventually(() => settled(ids));
    const got = receiver.requests.filter((r) => r.path === "/pair");
    const perId = new Map<string, number>();
    for (const r of got)
      perId.set(
        String(r.headers["webhook-id"]),
        (perId.get(String(r.headers["webhook-id"])) ?? 0) + 1,
      );
    expect(perId.size).toBe(ids.length * 3);
    expect([...perId.values()].every((count) => count === 1)).toBe(true);
    expect(a.stats().delivered).toBeGreaterThan(0);
    expect(b.stats().delivered).toBeGreaterThan(0);
    expect(a.stats().delivered + b.stats().delivered).toBe(ids.length * 3);
    for (const id of ids) {
      expect(received("/pair", id).map((r) => r.query.status)).toEqual([
        "ACCEPTED",
        "SENT",
        id < (ids[75] as number) ? "DELIVERED" : "DELIVERY_ERROR",
      ]);
    }
    await a.stop();
    await b.stop();
    receiver.set({ delayMs: 0 });
  });

  it("restarted in the middle of a stream of changes, loses none and resumes from its stored token", async () => {
    const account = await insertAccount(`${receiver.baseUrl}/restart`);
    // Sweeps far apart: after the start-up sweep, only the change stream drives the notifier.
    const first = notifier("restart-1", { sweepIntervalMs: 60_000 });
    await first.start();
    const ids: number[] = [];
    let producing = true;
    const producer = (async () => {
      while (producing) {
        const batch = await insertMessages(account._id, 5);
        ids.push(...batch);
        await statusChange(batch, ["ACCEPTED"], { status: "SENT" });
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
    })();
    await eventually(() => receiver.requests.filter((r) => r.path === "/restart").length >= 20);
    await first.stop();
    const token = await fixture.store.state.findOne({ _id: RESUME_TOKEN_KEY });
    expect(token?.value).toBeTruthy();
    // Changes while no notifier runs.
    await new Promise((resolve) => setTimeout(resolve, 300));
    producing = false;
    await producer;
    const whileDown = await insertMessages(account._id, 10);
    ids.push(...whileDown);
    const second = notifier("restart-2", { sweepIntervalMs: 60_000 });
    await second.start();
    await eventually(() => settled(ids));
    const stats = second.stats();
    expect(stats.resumedFromToken).toBe(true);
    // the stream replayed what happened while it was down (at least the ten inserts)
    expect(stats.streamEvents).toBeGreaterThanOrEqual(10);
    for (const id of ids) {
      const statuses = [
        ...new Map(
          received("/restart", id).map((r) => [r.headers["webhook-id"], r.query.status]),
        ).values(),
      ];
      expect(statuses, `message ${id}`).toEqual(
        whileDown.includes(id) ? ["ACCEPTED"] : ["ACCEPTED", "SENT"],
      );
    }
    // new changes after the restart are picked up by the stream (no sweep for a minute)
    const [late] = await insertMessages(account._id, 1);
    await eventually(() => received("/restart", late as number).length === 1, 10_000);
    await second.stop();
  });

  it("refuses private and link-local callback addresses unless allowed", async () => {
    const account = await insertAccount();
    const callbacks = [
      "http://10.0.0.1/hook",
      "http://169.254.169.254/latest/meta-data",
      `http://[::1]:${new URL(receiver.baseUrl).port}/guard`,
      `http://localhost:${new URL(receiver.baseUrl).port}/guard`,
      `${receiver.baseUrl}/guard`,
      "ftp://example.com/hook",
    ];
    const ids: number[] = [];
    for (const statusCallback of callbacks)
      ids.push(...(await insertMessages(account._id, 1, { statusCallback })));
    const n = notifier("guard", { allowPrivate: false });
    await n.start();
    await eventually(() => settled(ids));
    await n.stop();
    for (const id of ids) {
      const stored = await doc(id);
      expect(stored.notifications[0]?.state, stored.statusCallback).toBe("gave_up");
      expect(
        stored.notifications[0]?.attempts,
        JSON.stringify(stored.notifications[0]),
      ).toHaveLength(1);
      expect(stored.notifications[0]?.attempts[0]?.httpStatus).toBe(0);
      expect(stored.notifications[0]?.url).toBe(stored.statusCallback);
    }
    // Refused addresses say only that: not the address, what the host resolves to, nor its range.
    for (const id of ids.slice(0, 5)) {
      expect((await doc(id)).notifications[0]?.attempts[0]?.error).toBe(
        "ERR_ADDRESS_BLOCKED: callback address is not a public address",
      );
    }
    expect(receiver.requests.some((r) => r.path === "/guard")).toBe(false);
  });

  it("does not let a slow receiver stall the others", async () => {
    const slow = await startWebhookReceiver({ delayMs: 5_000 });
    try {
      const slowAccount = await insertAccount(`${slow.baseUrl}/slow`);
      const fastAccount = await insertAccount(`${receiver.baseUrl}/fast`);
      const slowIds = await insertMessages(slowAccount._id, 30);
      const fastIds = await insertMessages(fastAccount._id, 30);
      const n = notifier("slow", {
        concurrency: 8,
        receiverConcurrency: 2,
        timeoutMs: 1_000,
        retrySchedule: [60_000],
      });
      await n.start();
      await eventually(() => settled(fastIds));
      // every fast notification is out while most slow ones still wait for their first attempt
      const slowDocs = await fixture.store.messages.find({ _id: { $in: slowIds } }).toArray();
      const attempted = slowDocs.filter(
        (d) => (d.notifications[0]?.attempts.length ?? 0) > 0,
      ).length;
      expect(attempted).toBeLessThan(slowIds.length);
      await n.stop();
      const timedOut = (
        await fixture.store.messages.find({ _id: { $in: slowIds } }).toArray()
      ).flatMap((d) => d.notifications[0]?.attempts ?? []);
      expect(timedOut.every((a) => a.httpStatus === 0 && /timeout/.test(a.error ?? ""))).toBe(true);
    } finally {
      await slow.close();
    }
  });
});
