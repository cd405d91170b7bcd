/**
 * sendAt and cancel over real HTTP (docs/design.md "Message reads, client references, scheduled
 * sends and cancel"): the API on one service, two delivery workers on the same database as two
 * instances would be, each with a simulator that logs every part it is handed. What reached a
 * carrier is read from that log: a scheduled message is never handed over before its sendAt, and
 * a canceled one never after its cancel's 200, whatever the race with the workers.
 */
import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import { eventually } from "../support/fixtures.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";
import { type Account, creditOf, withQuery } from "./helpers.ts";

let service: RunningService;
let account: Account;
const workers: { worker: DeliveryWorker; carrier: SimulatorCarrier }[] = [];
// The warnings of the service and the workers: a 503 for a database failure names it only there
// (services/database-deadlines.ts), so a refused call shows them with its answer.
const warnings: string[] = [];
const logStream = new Writable({
  write(chunk: Buffer, _encoding, done) {
    warnings.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    done();
  },
});
const logger = pino({ level: "warn" }, logStream);
/** An answer, with the last warnings, as the message of a failed status check. */
const explained = (answer: { status: number; body: unknown }) =>
  JSON.stringify({ ...answer, warnings: warnings.slice(-5) });

beforeAll(async () => {
  service = await startService({ LOG_LEVEL: "warn" }, undefined, { logStream });
  account = await service.createAccount({ credit: 100_000 });
  for (const tag of ["a", "b"]) {
    const carrier = new SimulatorCarrier({
      db: service.store.db,
      sendDelayMs: 0,
      receiptDelayMs: 0,
      pollIntervalMs: 50,
      instanceId: `sim-${tag}`,
      window: 20,
      logSubmissions: true,
    });
    const worker = new DeliveryWorker({
      store: service.store,
      carrier,
      logger,
      instanceId: `worker-${tag}`,
      pollIntervalMs: 50,
    });
    await worker.start();
    workers.push({ worker, carrier });
  }
});
afterAll(async () => {
  for (const w of workers) await w.worker.stop();
  await service?.close();
});

const submissions = () =>
  service.store.db.collection<{ messageId: number; at: Date }>("simulator_submissions");
const send = (body: Record<string, unknown>) =>
  postJson(`${service.baseUrl}/sms`, { ...account, to: "+4915112345678", text: "hi", ...body });
const cancel = (id: number) => postJson(`${service.baseUrl}/sms/${id}/cancel`, { ...account });
const read = (id: number) => withQuery("GET", `${service.baseUrl}/sms/${id}`, { ...account });

describe("sendAt", () => {
  it("refuses a time more than 60 s past, more than 180 days ahead, or without an offset", async () => {
    const now = Date.now();
    for (const sendAt of [
      new Date(now - 120_000).toISOString(),
      new Date(now + 181 * 86_400_000).toISOString(),
      "2030-01-01T09:00:00",
      "tomorrow",
    ]) {
      const { status, body } = await send({ sendAt });
      expect(status, sendAt).toBe(400);
      expect(Object.keys(body.errors)).toEqual(["sendAt"]);
    }
  });

  it("up to 60 s past counts as now: sent at once, no sendAt kept", async () => {
    const { status, body } = await send({ sendAt: new Date(Date.now() - 30_000).toISOString() });
    expect(status).toBe(200);
    expect(body.sendAt).toBeUndefined();
    await eventually(async () => (await read(body.id)).body.status === "DELIVERED");
  });

  it("hands scheduled messages to the carrier no earlier than sendAt, each once, ttl from sendAt", async () => {
    const sendAt = new Date(Date.now() + 3_000);
    const offset = `${sendAt.toISOString().slice(0, 19)}+00:00`;
    const at = new Date(`${offset.slice(0, 19)}Z`);
    const single = await send({ sendAt: offset, ttl: 60 });
    expect(single.status).toBe(200);
    expect(single.body.status).toBe("ACCEPTED");
    expect(Date.parse(single.body.sendAt)).toBe(at.getTime());
    const batch = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      sendAt: offset,
      messages: Array.from({ length: 30 }, (_, i) => ({ to: `+49151200000${10 + i}`, text: "b" })),
    });
    expect(batch.status).toBe(200);
    const stored = await service.store.messages.findOne({ _id: single.body.id });
    expect(stored?.expiresAt.getTime()).toBe(at.getTime() + 60_000);
    const ids = [
      single.body.id,
      ...(await service.store.messages.find({ batchId: batch.body.id }).toArray()).map(
        (m) => m._id,
      ),
    ];
    // Counted as accepted at once, its batch active.
    const info = await withQuery("GET", `${service.baseUrl}/sms-batch/${batch.body.id}`, {
      ...account,
    });
    expect(info.body).toMatchObject({ acceptedCount: 30, sentCount: 0, isActive: true });
    await eventually(
      async () => (await submissions().countDocuments({ messageId: { $in: ids } })) === ids.length,
    );
    const log = await submissions()
      .find({ messageId: { $in: ids } })
      .toArray();
    // Due times are on the database's clock (store/server-clock.ts); the simulator stamps parts
    // with this process's, so each stamp is read on the database's clock as the service sees it
    // (the same machine's clocks, told apart by up to half a round trip).
    const serverOffset = service.store.clock.offset;
    for (const entry of log) {
      expect(entry.at.getTime() + serverOffset).toBeGreaterThanOrEqual(at.getTime());
    }
    expect(new Set(log.map((e) => e.messageId)).size).toBe(ids.length);
    const { body } = await read(single.body.id);
    expect(body.sendAt).toBe(at.toISOString());
    const sent = body.statusHistory.find((h: { status: string }) => h.status === "SENT");
    expect(Date.parse(sent.time)).toBeGreaterThanOrEqual(at.getTime());
  });
});

describe("cancel", () => {
  it("cancels a scheduled message: CANCELED, refunded once, never sent; again is 200", async () => {
    const before = await creditOf(service, account.apiKey);
    const sent = await send({
      sendAt: new Date(Date.now() + 2_000).toISOString(),
      text: "x".repeat(200),
      clientRef: "to-cancel",
    });
    expect(await creditOf(service, account.apiKey)).toBe(before - 2);
    const first = await cancel(sent.body.id);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      id: sent.body.id,
      status: "CANCELED",
      clientRef: "to-cancel",
    });
    expect(await creditOf(service, account.apiKey)).toBe(before);
    const again = await cancel(sent.body.id);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("CANCELED");
    expect(await creditOf(service, account.apiKey)).toBe(before);
    // Past its sendAt, still never handed over.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await submissions().countDocuments({ messageId: sent.body.id })).toBe(0);
    const { body } = await read(sent.body.id);
    expect(body.status).toBe("CANCELED");
    expect(body.statusHistory.map((h: { status: string }) => h.status)).toEqual([
      "ACCEPTED",
      "CANCELED",
    ]);
    const listed = await withQuery("GET", `${service.baseUrl}/sms`, {
      ...account,
      status: "CANCELED",
    });
    expect(listed.body.messages.map((m: { id: number }) => m.id)).toContain(sent.body.id);
  });

  it("a message a carrier took is 409 errors.id; another account's is 404", async () => {
    const sent = await send({});
    await eventually(async () => (await read(sent.body.id)).body.status === "DELIVERED");
    const refused = await cancel(sent.body.id);
    expect(refused.status).toBe(409);
    expect(Object.keys(refused.body.errors)).toEqual(["id"]);
    const stranger = await service.createAccount({ credit: 1 });
    const theirs = await postJson(`${service.baseUrl}/sms/${sent.body.id}/cancel`, { ...stranger });
    expect(theirs.status).toBe(404);
  });

  it("a scheduled batch: every message CANCELED, one refund, the batch's counts", async () => {
    const before = await creditOf(service, account.apiKey);
    const batch = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      sendAt: new Date(Date.now() + 60_000).toISOString(),
      messages: Array.from({ length: 25 }, (_, i) => ({ to: `+49151300000${10 + i}`, text: "c" })),
    });
    const answer = await postJson(`${service.baseUrl}/sms-batch/${batch.body.id}/cancel`, {
      ...account,
    });
    expect(answer).toEqual({
      status: 200,
      body: { id: batch.body.id, canceledCount: 25, notCanceledCount: 0 },
    });
    expect(await creditOf(service, account.apiKey)).toBe(before);
    const info = await withQuery("GET", `${service.baseUrl}/sms-batch/${batch.body.id}`, {
      ...account,
    });
    expect(info.body).toMatchObject({
      acceptedCount: 25,
      sentCount: 0,
      undeliveredCount: 25,
      canceledCount: 25,
      isActive: false,
    });
  });

  it("the race with two workers: each message either CANCELED and never handed over, or handed over and not CANCELED", async () => {
    for (let round = 0; round < 3; round++) {
      const before = await creditOf(service, account.apiKey);
      const batch = await postJson(`${service.baseUrl}/sms-batch`, {
        ...account,
        messages: Array.from({ length: 300 }, (_, i) => ({
          to: `+4915140${round}${String(100_000 + i)}`,
          text: "race",
        })),
      });
      expect(batch.status, explained(batch)).toBe(200);
      const answer = await postJson(`${service.baseUrl}/sms-batch/${batch.body.id}/cancel`, {
        ...account,
      });
      expect(answer.status, explained(answer)).toBe(200);
      // Whatever the workers still do, after the 200 nothing canceled may reach a carrier.
      const all = await service.store.messages.find({ batchId: batch.body.id }).toArray();
      await eventually(async () => {
        const open = await service.store.messages.countDocuments({
          batchId: batch.body.id,
          status: { $in: ["ACCEPTED", "SENT"] },
        });
        return open === 0;
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const docs = await service.store.messages.find({ batchId: batch.body.id }).toArray();
      const handed = new Set(
        (
          await submissions()
            .find({ messageId: { $in: all.map((m) => m._id) } })
            .toArray()
        ).map((e) => e.messageId),
      );
      const canceled = docs.filter((m) => m.status === "CANCELED");
      for (const m of docs) {
        if (m.status === "CANCELED") expect(handed.has(m._id), `${m._id} canceled`).toBe(false);
        else expect(handed.has(m._id), `${m._id} ${m.status}`).toBe(true);
      }
      console.log(`cancel race round ${round}: ${canceled.length} of 300 canceled`);
      expect(answer.body.canceledCount).toBe(canceled.length);
      expect(answer.body.notCanceledCount).toBe(300 - canceled.length);
      // Refunded exactly the canceled ones (1 a message).
      await eventually(
        async () => (await creditOf(service, account.apiKey)) === before - (300 - canceled.length),
      );
    }
  });
});
