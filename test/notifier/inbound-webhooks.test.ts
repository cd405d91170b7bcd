/**
 * Inbound messages' webhooks (issue 26 item 4) against the real database and a real HTTP
 * receiver on loopback: an MO taken by the intake is POSTed to the account's inbound URL, signed
 * over its body; a failing receiver is retried on the schedule; the order per (account, sender)
 * holds behind a slow and a failing receiver, while other senders pass; a message stored while no
 * notifier ran is sent once one starts.
 */
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { InboundIntake } from "../../src/inbound/intake.ts";
import type { MoPart } from "../../src/inbound/mo-part.ts";
import { inSenderOrder } from "../../src/notifier/inbound-claims.ts";
import { inboundWebhookBody, planInbound } from "../../src/notifier/inbound-notifications.ts";
import { InboundWebhookQueue } from "../../src/notifier/inbound-queue.ts";
import { verifyWebhookSignature } from "../../src/notifier/signature.ts";
import { encodeGsm7 } from "../../src/smpp/alphabets.ts";
import type { AccountDoc } from "../../src/store/documents.ts";
import {
  type InboundMessageDoc,
  inboundMessagesCollection,
} from "../../src/store/inbound-messages.ts";
import { assignNumber } from "../../src/store/numbers.ts";
import { IdAllocator } from "../../src/store/sequences.ts";
import { eventually, insertAccount } from "../support/fixtures.ts";
import { testNotifiers } from "../support/notifiers.ts";
import { useTestStore } from "../support/store.ts";
import {
  type ReceivedRequest,
  startWebhookReceiver,
  type WebhookReceiver,
} from "../support/webhook-receiver.ts";

const logger = pino({ level: "silent" });
const fixture = useTestStore();
let receiver: WebhookReceiver;
const notifiers = testNotifiers(() => fixture.store);
const notifier = notifiers.make;
let numbers = 0;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterEach(async () => {
  await notifiers.stopAll();
  receiver.set({ delayMs: 0, respond: undefined });
});
afterAll(async () => {
  await receiver?.close();
});

function intake(): InboundIntake {
  return new InboundIntake({
    db: fixture.store.db,
    now: () => fixture.store.clock.now(),
    ids: new IdAllocator(fixture.store.counters, "inbound", 10),
    logger,
    webhooks: new InboundWebhookQueue(fixture.store, logger, () => notifiers.wakeInbound()),
    reassemblyMs: 1_800_000,
    defaultAlphabet: "gsm7",
  });
}

/** An account with an inbound URL on the receiver (`path`) and a number of its own. */
async function accountWithNumber(path: string): Promise<{ account: AccountDoc; number: string }> {
  const account = await insertAccount(fixture.store);
  await fixture.store.accounts.updateOne(
    { _id: account._id },
    { $set: { inboundUrl: `${receiver.baseUrl}${path}` } },
  );
  const number = `+4930777${String(++numbers).padStart(4, "0")}`;
  await assignNumber(fixture.store.db, account._id, number);
  return { account, number };
}

function mo(from: string, to: string, text: string): MoPart {
  return {
    carrier: "smpp:test",
    from,
    to,
    dataCoding: 0,
    payload: encodeGsm7(text) as Buffer,
  };
}

const at = (path: string) => receiver.requests.filter((r) => r.path === path);
const bodyOf = (r: Pick<ReceivedRequest, "body">) =>
  JSON.parse(r.body) as { id: number; from: string; text: string };

async function stored(to: string): Promise<InboundMessageDoc[]> {
  return inboundMessagesCollection(fixture.store.db).find({ to }).sort({ _id: 1 }).toArray();
}

describe("inbound webhooks", () => {
  it("POSTs an inbound message to the account's inbound URL as JSON, signed over its body", async () => {
    const { account, number } = await accountWithNumber("/inbound/signed");
    const n = notifier("signed");
    await n.start();
    await intake().take([mo("+4915100000001", number, "stop")]);
    await receiver.waitFor(() => at("/inbound/signed").some((r) => r.answered === 200));
    const [message] = await stored(number);
    const [request] = at("/inbound/signed");
    expect(request?.method).toBe("POST");
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(request?.body ?? "")).toEqual({
      id: message?._id,
      from: "+4915100000001",
      to: number,
      text: "stop",
      parts: 1,
      receivedAt: message?.receivedAt.toISOString(),
      optOutType: "STOP",
    });
    expect(request?.headers["webhook-id"]).toBe(`inbound_${message?._id}`);
    const verify = (secret: string, body: string) =>
      verifyWebhookSignature({ secret, headers: request?.headers ?? {}, pathAndQuery: body });
    expect(verify(account.webhookSecret, request?.body ?? "")).toBe(true);
    expect(verify(account.webhookSecret, (request?.body ?? "").replace("stop", "STOP"))).toBe(
      false,
    );
    await eventually(async () => (await stored(number))[0]?.webhook?.state === "delivered");
    const [after] = await stored(number);
    expect(after?.webhook?.attempts.map((a) => a.httpStatus)).toEqual([200]);
    expect(after?.webhook?.url).toBe(`${receiver.baseUrl}/inbound/signed`);
    expect(after?.notifyAt).toBeUndefined();
    expect(after?.notifyLease).toBeUndefined();
  });

  it("retries a failing receiver on the status webhooks' schedule, with one webhook-id", async () => {
    const { number } = await accountWithNumber("/inbound/retry");
    let failures = 0;
    receiver.set({
      respond: (r) => (r.path === "/inbound/retry" && failures++ < 2 ? 503 : undefined),
    });
    const n = notifier("retry");
    await n.start();
    await intake().take([mo("+4915100000002", number, "Hello?")]);
    await eventually(async () => (await stored(number))[0]?.webhook?.state === "delivered");
    const got = at("/inbound/retry");
    expect(got.map((r) => r.answered)).toEqual([503, 503, 200]);
    expect(new Set(got.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    const [message] = await stored(number);
    const attempts = message?.webhook?.attempts ?? [];
    expect(attempts.map((a) => [a.httpStatus, a.error])).toEqual([
      [503, "HTTP 503"],
      [503, "HTTP 503"],
      [200, undefined],
    ]);
    // Each retry waited for its delay in the schedule (100 ms, then 200 ms), on one clock.
    const gap = (i: number) =>
      (attempts[i]?.at.getTime() ?? 0) - (attempts[i - 1]?.at.getTime() ?? 0);
    expect(gap(1)).toBeGreaterThanOrEqual(100);
    expect(gap(2)).toBeGreaterThanOrEqual(200);
  });

  it("keeps the order per sender behind a slow receiver and a failing message, while another sender passes", async () => {
    const { number } = await accountWithNumber("/inbound/order");
    const path = "/inbound/order";
    // Slow answers; the first message of sender A fails until B's last one is through.
    const through = (text: string) =>
      at(path).some((r) => r.answered === 200 && bodyOf(r).text === text);
    receiver.set({
      delayMs: 150,
      respond: (r) =>
        r.path === path && bodyOf(r).text === "A1" && !through("B4") ? 500 : undefined,
    });
    const n = notifier("order", { retrySchedule: Array(100).fill(200) });
    await n.start();
    const take = intake();
    // Each message in an intake batch of its own, while the earlier ones are being sent.
    for (let i = 1; i <= 4; i++) {
      await take.take([mo("+4915100000010", number, `A${i}`)]);
      await take.take([mo("+4915100000011", number, `B${i}`)]);
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    await eventually(
      async () => (await stored(number)).every((m) => m.webhook?.state === "delivered"),
      30_000,
    );
    const texts = (from: string) =>
      at(path)
        .filter((r) => bodyOf(r).from === from)
        .map((r) => `${bodyOf(r).text}:${r.answered}`);
    // A's later messages waited until A1 was delivered (after B4: B was not held back by A's
    // failures); then each was sent once, in order.
    const a = texts("+4915100000010");
    expect(a.length).toBeGreaterThan(4);
    expect(new Set(a.slice(0, -4))).toEqual(new Set(["A1:500"]));
    expect(a.slice(-4)).toEqual(["A1:200", "A2:200", "A3:200", "A4:200"]);
    expect(texts("+4915100000011")).toEqual(["B1:200", "B2:200", "B3:200", "B4:200"]);
  });

  it("sends what was stored while no notifier ran once one starts, and none for an account without an inbound URL", async () => {
    const { number } = await accountWithNumber("/inbound/later");
    const plain = await insertAccount(fixture.store);
    await assignNumber(fixture.store.db, plain._id, "+4930777999");
    await intake().take([
      mo("+4915100000020", number, "while nobody listened"),
      mo("+4915100000020", "+4930777999", "no URL"),
    ]);
    const [waiting] = await stored(number);
    expect(waiting?.webhook).toEqual({ state: "pending", attempts: [] });
    expect((await stored("+4930777999"))[0]?.webhook).toBeUndefined();
    const n = notifier("later");
    await n.start();
    await receiver.waitFor(() => at("/inbound/later").some((r) => r.answered === 200));
    await eventually(async () => (await stored(number))[0]?.webhook?.state === "delivered");
    expect(at("/inbound/later").map((r) => bodyOf(r).text)).toEqual(["while nobody listened"]);
    expect(n.stats().inbound).toMatchObject({ delivered: 1 });
  });
});

describe("the order per sender and the plan, pure", () => {
  const now = new Date("2030-01-01T00:00:10Z");
  const message = (id: number, from: string, second: number, notifyAt?: Date) => ({
    _id: id,
    from,
    receivedAt: new Date(`2030-01-01T00:00:0${second}Z`),
    ...(notifyAt && { notifyAt }),
  });

  it("sends a claim's messages oldest first and holds those with an older pending one outside it", () => {
    const later = new Date("2030-01-01T00:00:40Z");
    const claimed = [
      message(5, "A", 5),
      message(2, "A", 2),
      message(7, "B", 7),
      message(8, "C", 3),
      message(9, "C", 3),
    ];
    const others = [
      // B's older message is leased elsewhere (its lease runs to `later`).
      message(6, "B", 6, later),
      // C's message 10 is as old as 8 and 9, of a later id: it does not hold them back.
      message(10, "C", 3, now),
      // A's newer pending message does not hold A's claimed ones back.
      message(11, "A", 9, now),
    ];
    const { ready, waiting } = inSenderOrder(claimed, others, now, 1000);
    expect(ready.map((m) => m._id)).toEqual([2, 8, 9, 5]);
    expect(waiting).toEqual([{ id: 7, until: later }]);
    // An older one that is due already: wait the deferral.
    const due = inSenderOrder([message(3, "D", 5)], [message(1, "D", 1, now)], now, 1000);
    expect(due).toEqual({ ready: [], waiting: [{ id: 3, until: new Date(now.getTime() + 1000) }] });
  });

  it("says that a message is incomplete, and leaves out an absent opt-out word", () => {
    const body = inboundWebhookBody({
      _id: 3,
      accountId: "a",
      from: "+4915100000001",
      to: "+4930777",
      text: "Half of a lo",
      parts: 2,
      receivedAt: now,
      incomplete: true,
    });
    expect(JSON.parse(body)).toEqual({
      id: 3,
      from: "+4915100000001",
      to: "+4930777",
      text: "Half of a lo",
      parts: 2,
      receivedAt: "2030-01-01T00:00:10.000Z",
      incomplete: true,
    });
  });

  it("plans a skip without an inbound URL, a refusal for a private address, a wait for its own retry", () => {
    const inbound = {
      _id: 1,
      accountId: "a",
      from: "+4915100000001",
      to: "+4930777",
      text: "hi",
      parts: 1,
      receivedAt: now,
    };
    const account = { _id: "a", webhookSecret: "whsec_AAAA" };
    expect(planInbound(inbound, account, "c", now, false)).toMatchObject({
      record: { state: "skipped", messageId: 1, claim: "c" },
    });
    const refused = planInbound(
      inbound,
      { ...account, inboundUrl: "http://127.0.0.1:9/in" },
      "c",
      now,
      false,
    );
    expect(refused).toMatchObject({ record: { state: "gave_up", url: "http://127.0.0.1:9/in" } });
    expect("record" in refused && refused.record.attempt?.error).toContain("not a public address");
    const retry = new Date(now.getTime() + 5000);
    const waiting = {
      ...inbound,
      webhook: { state: "pending" as const, attempts: [], nextAttemptAt: retry },
    };
    expect(
      planInbound(waiting, { ...account, inboundUrl: "https://example.com/in" }, "c", now, false),
    ).toEqual({
      record: {
        messageId: 1,
        accountId: "a",
        from: "+4915100000001",
        claim: "c",
        state: "pending",
        nextAttemptAt: retry,
        deferred: true,
      },
    });
  });
});
