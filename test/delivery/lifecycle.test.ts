/**
 * The whole lifecycle on a real database: delivery worker + simulator carrier + notifier, with a
 * real HTTP receiver on loopback. Every simulator path reaches the receiver in order with the
 * right parameters and valid signatures; batch messages carry batch_id; a restart of everything in
 * the middle of a batch still ends with every message in its designed final status.
 */

import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import type { ReasonName, StatusName } from "../../src/domain/message-status.ts";
import { verifyWebhookSignature } from "../../src/notifier/signature.ts";
import type { MessageDoc } from "../../src/store/documents.ts";
import { acceptedMessage, type NewMessage } from "../../src/store/messages.ts";
import { commitBatch } from "../support/batches.ts";
import { deliveryService } from "../support/delivery-service.ts";
import {
  designedOutcome,
  eventually,
  insertAccount as insertAccountInto,
  insertMessages as insertMessagesInto,
  testMessage,
} from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";
import {
  type ReceivedRequest,
  startWebhookReceiver,
  type WebhookReceiver,
} from "../support/webhook-receiver.ts";

const _logger = pino({ level: "silent" });
const fixture = useTestStore();
let receiver: WebhookReceiver;

const insertAccount = (statusUrl?: string) => insertAccountInto(fixture.store, statusUrl);
const message = testMessage;
const insertMessages = (messages: NewMessage[]) => insertMessagesInto(fixture.store, messages);
const waitUntil = eventually;

function startAll(tag: string, options: { sendDelayMs?: number; window?: number } = {}) {
  const carrier = new SimulatorCarrier({
    db: fixture.store.db,
    sendDelayMs: options.sendDelayMs ?? 10,
    receiptDelayMs: 100,
    pollIntervalMs: 100,
    instanceId: `sim-${tag}`,
    window: options.window ?? 500,
  });
  return { carrier, ...deliveryService(fixture.store, carrier, tag) };
}

function finalOf(doc: Pick<MessageDoc, "notifications">): boolean {
  return doc.notifications.every((n) => n.state !== "pending");
}

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  await receiver?.close();
});

/** The designed outcome per destination: statuses notified in order, final reason. */
const PATHS: { to: string; statuses: StatusName[]; reason?: ReasonName; ttl?: number }[] = [
  { to: "+15550100200", statuses: ["ACCEPTED", "SENT", "DELIVERED"] },
  { to: "+9995550001", statuses: ["ACCEPTED", "SEND_ERROR"] },
  { to: "+9995550002", statuses: ["ACCEPTED", "SENT", "DELIVERY_ERROR"], reason: "Unreachable" },
  { to: "+9995550003", statuses: ["ACCEPTED", "SENT", "DELIVERY_ERROR"], reason: "Expired" },
  { to: "+9995550004", statuses: ["ACCEPTED", "SENT", "DELIVERY_ERROR"], reason: "SIM card full" },
  { to: "+9995550005", statuses: ["ACCEPTED", "SENT", "DELIVERY_ERROR"], reason: "Unroutable" },
  { to: "+9995550006", statuses: ["ACCEPTED", "SENT", "DELIVERY_ERROR"], reason: "Undelivered" },
  {
    to: "+9995550007",
    statuses: ["ACCEPTED", "SENT", "DELIVERY_ERROR"],
    reason: "Expired",
    ttl: 2,
  },
];

function requestsFor(id: number): ReceivedRequest[] {
  return receiver.succeeded().filter((r) => r.query.id === String(id));
}

describe("message lifecycle with status webhooks", () => {
  it("walks every simulator path to the receiver, in order, signed, with batch_id for batches", async () => {
    const account = await insertAccount(`${receiver.baseUrl}/status?source=account`);
    const single = PATHS.map((p) => message(account._id, p.to, p.ttl ? { ttl: p.ttl } : {}));
    const multi = [
      message(account._id, "+15550100300", {
        parts: 3,
        text: "a".repeat(400),
        segments: [
          { id: 1001, text: "a".repeat(153) },
          { id: 1002, text: "a".repeat(153) },
          { id: 1003, text: "a".repeat(94) },
        ],
      }),
      message(account._id, "+9995550304", {
        parts: 2,
        text: "b".repeat(200),
        segments: [
          { id: 1004, text: "b".repeat(153) },
          { id: 1005, text: "b".repeat(47) },
        ],
      }),
    ];
    const overridden = message(account._id, "+15550100400", {
      statusCallback: `${receiver.baseUrl}/override?token=abc`,
    });
    const batchId = 77;
    const batch = PATHS.map((p) =>
      message(account._id, p.to, { batchId, ...(p.ttl ? { ttl: p.ttl } : {}) }),
    );
    await insertMessages([...single, ...multi, overridden]);
    await insertMessages(batch);

    const service = startAll("paths");
    await service.start();
    try {
      await commitBatch(fixture.store, batchId, account._id);
      service.worker.wake();
      const all = [...single, ...multi, overridden, ...batch].map((m) => m.id);
      await waitUntil(async () => {
        const docs = await fixture.store.messages.find({ _id: { $in: all } }).toArray();
        return (
          docs.length === all.length &&
          docs.every((d) => d.status !== "ACCEPTED" && d.status !== "SENT" && finalOf(d))
        );
      });
    } finally {
      await service.stop();
    }

    const check = (m: NewMessage, statuses: StatusName[]) => {
      const got = requestsFor(m.id);
      expect(
        got.map((r) => r.query.status),
        `statuses of message ${m.id} to ${m.to}`,
      ).toEqual(statuses);
      for (const r of got) {
        expect(r.method).toBe("GET");
        expect(r.query.batch_id).toBe(m.batchId === undefined ? undefined : String(m.batchId));
        expect(
          verifyWebhookSignature({
            secret: account.webhookSecret,
            headers: r.headers,
            pathAndQuery: r.pathAndQuery,
          }),
        ).toBe(true);
      }
      expect(new Set(got.map((r) => r.headers["webhook-id"])).size).toBe(got.length);
      return got;
    };
    for (const [i, path] of PATHS.entries()) {
      for (const m of [single[i], batch[i]]) {
        if (!m) throw new Error("missing message");
        const got = check(m, path.statuses);
        expect(got.every((r) => r.path === "/status" && r.query.source === "account")).toBe(true);
        const doc = await fixture.store.messages.findOne({ _id: m.id });
        expect(doc?.status).toBe(path.statuses.at(-1));
        expect(doc?.reason).toBe(path.reason);
        expect(doc?.notifications.map((n) => n.state)).toEqual(
          path.statuses.map(() => "delivered"),
        );
        expect(doc?.notifyAt).toBeUndefined();
        expect(doc?.deliveryAt).toBeUndefined();
      }
    }
    // multi-part: one status per message
    check(multi[0] as NewMessage, ["ACCEPTED", "SENT", "DELIVERED"]);
    check(multi[1] as NewMessage, ["ACCEPTED", "SENT", "DELIVERY_ERROR"]);
    const failedMulti = await fixture.store.messages.findOne({ _id: (multi[1] as NewMessage).id });
    expect(failedMulti?.reason).toBe("SIM card full");
    expect(
      (await fixture.store.messages.findOne({ _id: (multi[0] as NewMessage).id }))?.carrierIds,
    ).toHaveLength(3);
    // statusCallback overrides the account's URL, and its own query is kept
    const overrideRequests = check(overridden, ["ACCEPTED", "SENT", "DELIVERED"]);
    for (const r of overrideRequests) {
      expect(r.path).toBe("/override");
      expect(r.query.token).toBe("abc");
      expect(r.pathAndQuery).toMatch(/^\/override\?token=abc&id=\d+&status=[A-Z_]+$/);
    }
    // attempts are recorded for GetMessage
    const doc = await fixture.store.messages.findOne({ _id: overridden.id });
    expect(doc?.notifications[0]?.attempts[0]?.httpStatus).toBe(200);
    expect(doc?.notifications[0]?.url).toBe(`${receiver.baseUrl}/override?token=abc`);
  });

  it("expires a message whose ttl ran out before it was sent", async () => {
    const account = await insertAccount(`${receiver.baseUrl}/expiry`);
    const late = message(account._id, "+15550100500", { ttl: 1 });
    // Written without marking its lanes, as a crash between the two leaves it: the queues'
    // overdue sweeps find it.
    await fixture.store.messages.insertOne(acceptedMessage(late, new Date(Date.now() - 1500)));
    const service = startAll("expiry");
    await service.start();
    try {
      await waitUntil(async () => {
        const doc = await fixture.store.messages.findOne({ _id: late.id });
        return doc?.status === "DELIVERY_ERROR" && finalOf(doc);
      });
    } finally {
      await service.stop();
    }
    expect(requestsFor(late.id).map((r) => r.query.status)).toEqual(["ACCEPTED", "DELIVERY_ERROR"]);
    expect((await fixture.store.messages.findOne({ _id: late.id }))?.reason).toBe("Expired");
  });

  it("ends a batch in its designed statuses across a restart in the middle", async () => {
    const account = await insertAccount(`${receiver.baseUrl}/restart`);
    const batchId = 88;
    const digits = ["0", "1", "2", "3", "4", "5", "6", "8", "9"];
    const batch = Array.from({ length: 360 }, (_, i) =>
      message(account._id, `+999555${String(i).padStart(4, "0")}${digits[i % digits.length]}`, {
        batchId,
      }),
    );
    await insertMessages(batch);
    await commitBatch(fixture.store, batchId, account._id);
    const ids = batch.map((m) => m.id);

    const first = startAll("before", { window: 40, sendDelayMs: 60 });
    await first.start();
    await waitUntil(
      async () =>
        (await fixture.store.messages.countDocuments({ _id: { $in: ids }, status: "SENT" })) >= 40,
    );
    await first.stop();
    const progressed = await fixture.store.messages.countDocuments({
      _id: { $in: ids },
      status: { $ne: "ACCEPTED" },
    });
    expect(progressed).toBeLessThan(batch.length); // really stopped in the middle

    const second = startAll("after", { window: 100 });
    await second.start();
    try {
      await waitUntil(async () => {
        const docs = await fixture.store.messages
          .find({ _id: { $in: ids } }, { projection: { status: 1, notifications: 1 } })
          .toArray();
        return docs.every((d) => d.status !== "ACCEPTED" && d.status !== "SENT" && finalOf(d));
      }, 40_000);
    } finally {
      await second.stop();
    }

    const docs = await fixture.store.messages.find({ _id: { $in: ids } }).toArray();
    for (const doc of docs) {
      const want = designedOutcome(doc.to);
      expect({ status: doc.status, reason: doc.reason }, doc.to).toEqual({
        status: want.status,
        reason: want.reason,
      });
      // one status change per status: nothing submitted twice once recorded, nothing lost
      const statuses = doc.notifications.map((n) => n.status);
      expect(new Set(statuses).size).toBe(statuses.length);
      // the receiver got every notification, in order, with the batch id
      const got = [
        ...new Map(requestsFor(doc._id).map((r) => [r.headers["webhook-id"], r])).values(),
      ];
      expect(got.map((r) => r.query.status)).toEqual(statuses);
      expect(got.every((r) => r.query.batch_id === String(batchId))).toBe(true);
    }
  });
});
