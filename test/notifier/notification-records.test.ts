import { describe, expect, it } from "vitest";
import { claimDueNotifications, type NotifyingMessage } from "../../src/notifier/claiming.ts";
import {
  type NotificationOutcome,
  recordNotificationOutcomes,
} from "../../src/notifier/notification-records.ts";
import { BatchCommits } from "../../src/store/batch-commits.ts";
import { changeStatus } from "../../src/store/status-changes.ts";
import { insertMessages, testMessage } from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();

async function claimOne(id: number, token: string): Promise<NotifyingMessage> {
  const claimed = await claimDueNotifications(fixture.store.messages, {
    now: new Date(),
    limit: 1000,
    leaseMs: 60_000,
    token,
    commits: new BatchCommits(fixture.store.batches),
  });
  const message = claimed.find((m) => m._id === id);
  if (!message) throw new Error(`message ${id} was not claimed`);
  return message;
}

function delivered(message: NotifyingMessage, claim: string): NotificationOutcome {
  return {
    messageId: message._id,
    claim,
    index: 0,
    length: message.notifications.length,
    state: "delivered",
    attempt: { at: new Date(), httpStatus: 200, durationMs: 3 },
    url: "http://receiver.test/hook",
    ...(message.notifications[0] && { notification: message.notifications[0] }),
  };
}

const markSent = (id: number) =>
  changeStatus(fixture.store.messages, [id], ["ACCEPTED"], { status: "SENT" }, new Date());

const stored = async (id: number) => {
  const doc = await fixture.store.messages.findOne({ _id: id });
  if (!doc) throw new Error(`message ${id} is gone`);
  return doc;
};

/** A new message, its ACCEPTED notification claimed with `token`. */
async function newClaimedMessage(token: string) {
  const [id] = await insertMessages(fixture.store, [testMessage("acc", "+4915112345678")]);
  return { id: id as number, claimed: await claimOne(id as number, token) };
}

const recordDelivered = (claimed: NotifyingMessage, token: string, now = new Date()) =>
  recordNotificationOutcomes(fixture.store.messages, [delivered(claimed, token)], now);

describe("recording a delivered notification", () => {
  it("leaves the message off the queue when nothing follows it", async () => {
    const { id, claimed } = await newClaimedMessage("n-quiet");

    await recordDelivered(claimed, "n-quiet");

    const doc = await stored(id);
    expect(doc.notifications[0]).toMatchObject({
      state: "delivered",
      url: "http://receiver.test/hook",
    });
    expect(doc.notifications[0]?.attempts).toHaveLength(1);
    expect(doc.notifyAt).toBeUndefined();
    expect(doc.notifyLease).toBeUndefined();
  });

  it("makes the next one due when its status changed after the claim", async () => {
    const { id, claimed } = await newClaimedMessage("n-raced");
    await markSent(id); // appends notification 1 while notification 0 is being sent

    const now = new Date();
    await recordDelivered(claimed, "n-raced", now);

    const doc = await stored(id);
    expect(doc.notifications.map((n) => [n.status, n.state])).toEqual([
      ["ACCEPTED", "delivered"],
      ["SENT", "pending"],
    ]);
    expect(doc.notifyAt?.getTime()).toBe(now.getTime());
    expect(doc.notifyLease).toBeUndefined();
  });

  it("lets a status change after the record make its own notification due", async () => {
    const { id, claimed } = await newClaimedMessage("n-after");
    await recordDelivered(claimed, "n-after");

    await markSent(id);

    const doc = await stored(id);
    expect(doc.notifications[1]).toMatchObject({ status: "SENT", state: "pending" });
    expect(doc.notifyAt).toBeInstanceOf(Date);
  });

  it("written whole, keeps the earlier attempts and drops the retry time", async () => {
    const [id] = await insertMessages(fixture.store, [testMessage("acc", "+4915112345678")]);
    const failedAt = new Date(Date.now() - 5000);
    await fixture.store.messages.updateOne(
      { _id: id as number },
      {
        $push: { "notifications.0.attempts": { at: failedAt, httpStatus: 503, durationMs: 9 } },
        $set: { "notifications.0.nextAttemptAt": new Date(Date.now() - 1000) },
      },
    );
    const claimed = await claimOne(id as number, "n-whole");

    await recordNotificationOutcomes(
      fixture.store.messages,
      [delivered(claimed, "n-whole")],
      new Date(),
    );

    const notification = (await stored(id as number)).notifications[0];
    expect(notification).toMatchObject({ status: "ACCEPTED", state: "delivered" });
    expect(notification?.attempts.map((a) => a.httpStatus)).toEqual([503, 200]);
    expect(notification?.nextAttemptAt).toBeUndefined();
  });

  it("records nothing for a claim that was taken over", async () => {
    const { id, claimed } = await newClaimedMessage("n-old");
    await fixture.store.messages.updateOne({ _id: id }, { $set: { "notifyLease.owner": "n-new" } });

    await recordNotificationOutcomes(
      fixture.store.messages,
      [delivered(claimed, "n-old")],
      new Date(),
    );

    const doc = await stored(id);
    expect(doc.notifications[0]?.state).toBe("pending");
    expect(doc.notifyLease?.owner).toBe("n-new");
  });
});

describe("the due time a record leaves", () => {
  it("is returned per outcome, so the notifier marks the message's lane due then", async () => {
    const quiet = await newClaimedMessage("d-quiet");
    const retried = await newClaimedMessage("d-retry");
    const kept = await newClaimedMessage("d-kept");
    const now = new Date();
    const retryAt = new Date(now.getTime() + 5_000);

    const due = await recordNotificationOutcomes(
      fixture.store.messages,
      [
        // nothing follows in the snapshot: a status change may have appended one meanwhile
        delivered(quiet.claimed, "d-quiet"),
        {
          ...delivered(retried.claimed, "d-retry"),
          state: "pending",
          nextAttemptAt: retryAt,
          attempt: { at: now, httpStatus: 503, durationMs: 2 },
        },
        { ...delivered(kept.claimed, "d-kept"), keepLease: true },
      ],
      now,
    );

    expect(due).toEqual([now, retryAt, undefined]);
    expect((await stored(retried.id)).notifyAt).toEqual(retryAt);
    expect((await stored(kept.id)).notifyLease?.owner).toBe("d-kept");
  });

  it("is none after the notification of a final status", async () => {
    const { id, claimed } = await newClaimedMessage("d-final");
    const outcome = { ...delivered(claimed, "d-final"), last: true };

    expect(await recordNotificationOutcomes(fixture.store.messages, [outcome], new Date())).toEqual(
      [undefined],
    );
    expect((await stored(id)).notifyAt).toBeUndefined();
  });
});

describe("claiming notifications", () => {
  it("takes the one due longest first, whatever order the messages were stored in", async () => {
    const now = Date.now();
    const ids = await insertMessages(fixture.store, [
      testMessage("acc-order", "+4915112345678"),
      testMessage("acc-order", "+4915112345678"),
      testMessage("acc-order", "+4915112345678"),
    ]);
    // Stored first, due last.
    const dueAt = [now - 60_000, now - 180_000, now - 120_000];
    await Promise.all(
      ids.map((id, i) =>
        fixture.store.messages.updateOne(
          { _id: id },
          { $set: { notifyAt: new Date(dueAt[i] as number) } },
        ),
      ),
    );
    const claimFirst = (token: string) =>
      claimDueNotifications(fixture.store.messages, {
        now: new Date(now),
        limit: 1,
        leaseMs: 60_000,
        token,
        commits: new BatchCommits(fixture.store.batches),
      });

    const order = [
      ...(await claimFirst("o-1")),
      ...(await claimFirst("o-2")),
      ...(await claimFirst("o-3")),
    ].map((m) => m._id);

    expect(order).toEqual([ids[1], ids[2], ids[0]]);
  });
});
