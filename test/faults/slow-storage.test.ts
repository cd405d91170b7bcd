/**
 * Defects 7, 8 and 9 seen from the wire, through a proxy that holds or records commands: storage
 * slower than a call's deadline is answered 503 in time and never lands later; the settler's rule
 * is enforced by the configuration; every write of money and messages asks for a majority and the
 * journal, the settler reads durable data; an account with too many unsettled charges is refused.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/config.ts";
import { settleAbandonedCharges } from "../../src/store/charge-settler.ts";
import { MAX_PENDING_CHARGES } from "../../src/store/charges.ts";
import { is } from "../support/fault-proxy.ts";
import {
  type FaultyService,
  post,
  SHORT_DEADLINES,
  startFaultyService,
} from "../support/faulty-database.ts";
import { eventually } from "../support/fixtures.ts";

let faulty: FaultyService;
let account: { apiKey: string; apiSecret: string };

beforeAll(async () => {
  faulty = await startFaultyService(SHORT_DEADLINES, { record: true });
  account = await faulty.service.createAccount({ credit: 1000 });
});
afterAll(() => faulty?.close());

const sms = (text: string) => ({ to: "+4915112345678", text });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function settled() {
  await eventually(async () => {
    const doc = await faulty.direct.accounts.findOne({ _id: account.apiKey });
    return doc?.pendingCharges.length === 0;
  }, 20_000);
  return (await faulty.direct.accounts.findOne({ _id: account.apiKey }))?.creditMicros;
}

describe("a deadline shorter than the settler's cutoff (defect 7)", () => {
  it("a send whose insert is held past the deadline: 503 in time, never stored, refunded", async () => {
    const before = await settled();
    const release = faulty.proxy.addRule((c) =>
      is("insert", "messages")(c) ? { delayMs: 4_000 } : undefined,
    );
    try {
      const answer = await post(`${faulty.service.baseUrl}/sms`, sms("held send"), account);
      expect(answer.status).toBe(503);
      expect(answer.ms).toBeLessThan(4_000);
    } finally {
      release();
    }
    // Past the hold: the write was abandoned with its connection and never lands.
    await sleep(4_500);
    expect(await faulty.direct.messages.countDocuments({ text: "held send" })).toBe(0);
    expect(await settled()).toBe(before);
  });

  it("a batch whose commit is held past its deadline: 503, no batch, messages removed, refunded", async () => {
    const before = await settled();
    const release = faulty.proxy.addRule((c) =>
      is("insert", "batches")(c) ? { delayMs: 4_000 } : undefined,
    );
    try {
      const answer = await post(
        `${faulty.service.baseUrl}/sms-batch`,
        { name: "held", messages: [sms("held batch"), sms("held batch")] },
        account,
      );
      expect(answer.status).toBe(503);
    } finally {
      release();
    }
    await sleep(4_500);
    expect(await settled()).toBe(before);
    expect(await faulty.direct.batches.countDocuments({ name: "held" })).toBe(0);
    expect(await faulty.direct.messages.countDocuments({ text: "held batch" })).toBe(0);
  });

  it("stamps a send's charge when its group is issued, not when it was queued", async () => {
    // The first send's group is held in flight: the sends that arrive meanwhile wait in the
    // queue for it, and go out as the next group.
    const release = faulty.proxy.addRule((c) =>
      is("insert", "messages")(c) ? { delayMs: 400 } : undefined,
    );
    const insertsBefore = faulty.proxy.commands.filter(is("insert", "messages")).length;
    let queuedAt = 0;
    try {
      const first = post(`${faulty.service.baseUrl}/sms`, sms("q1"), account);
      await eventually(
        async () => faulty.proxy.commands.filter(is("insert", "messages")).length > insertsBefore,
      );
      queuedAt = Date.now();
      await Promise.all([
        first,
        ...["q2", "q3"].map((text) => post(`${faulty.service.baseUrl}/sms`, sms(text), account)),
      ]);
    } finally {
      release();
    }
    const third = await faulty.direct.messages.findOne({ text: "q3" });
    // The debit of the group holding the third send: its ref, or one of its messages.
    const charges = (c: (typeof faulty.proxy.commands)[number]) => {
      const charge = c.body.update?.$push?.pendingCharges;
      return [charge?.ref, ...(charge?.messages ?? []).map((m: { id: number }) => m.id)];
    };
    const debits = faulty.proxy.commands.filter(
      (c) => is("findAndModify", "accounts")(c) && charges(c).includes(third?._id),
    );
    expect(debits).toHaveLength(1);
    const at = debits[0]?.body.update.$push.pendingCharges.at as Date;
    // The server clock is the local one here (same machine), within the held insert's delay.
    expect(at.getTime() - queuedAt).toBeGreaterThanOrEqual(300);
  });

  it("refuses a settler cutoff shorter than twice the longer deadline", () => {
    expect(() =>
      loadConfig({ SMS_REQUEST_TIMEOUT_MS: "5000", SMS_SETTLE_AFTER_MS: "9000" }),
    ).toThrow(/SMS_SETTLE_AFTER_MS/);
    expect(loadConfig({}).settleAfterMs).toBeGreaterThanOrEqual(
      2 * Math.max(loadConfig({}).requestTimeoutMs, loadConfig({}).batchStoreTimeoutMs),
    );
  });
});

describe("durable writes and reads (defect 8)", () => {
  it("debits, messages, batches and charges are written w:majority, journaled", async () => {
    faulty.proxy.commands.length = 0;
    expect((await post(`${faulty.service.baseUrl}/sms`, sms("durable"), account)).status).toBe(200);
    expect(
      (
        await post(
          `${faulty.service.baseUrl}/sms-batch`,
          { messages: [sms("durable batch")] },
          account,
        )
      ).status,
    ).toBe(200);
    await sleep(200); // confirmations are flushed off the request path
    const writes = faulty.proxy.commands.filter(
      (c) =>
        ["insert", "update", "findAndModify", "delete"].includes(c.name) &&
        ["accounts", "messages", "batches"].includes(c.collection ?? ""),
    );
    expect(new Set(writes.map((c) => `${c.name} ${c.collection}`))).toEqual(
      new Set(["findAndModify accounts", "insert messages", "insert batches", "update accounts"]),
    );
    for (const write of writes) expect(write.body.writeConcern).toEqual({ w: "majority", j: true });
  });

  it("the settler reads majority-committed data from the primary", async () => {
    faulty.proxy.commands.length = 0;
    await faulty.service.store.accounts.updateOne(
      { _id: account.apiKey },
      {
        $push: {
          pendingCharges: { ref: 999_999, kind: "batch", amountMicros: 0, at: new Date(0) },
        },
      },
    );
    await settleAbandonedCharges(faulty.service.store, 60_000);
    const reads = faulty.proxy.commands.filter(
      (c) => ["find", "aggregate"].includes(c.name) && c.collection !== "$cmd.aggregate",
    );
    expect(reads.length).toBeGreaterThan(0);
    for (const read of reads) {
      expect(read.body.readConcern).toEqual({ level: "majority" });
      expect(read.body.$readPreference?.mode ?? "primary").toBe("primary");
    }
  });
});

describe(`at most ${MAX_PENDING_CHARGES} pending charges per account (defect 9)`, () => {
  it("refuses a send with 503 in the spec's shape, charging nothing, while the bound is reached", async () => {
    const credit = await settled();
    const fresh = { ref: 0, kind: "message" as const, amountMicros: 0, at: new Date() };
    await faulty.direct.accounts.updateOne(
      { _id: account.apiKey },
      {
        $push: {
          pendingCharges: {
            $each: Array.from({ length: MAX_PENDING_CHARGES }, (_, i) => ({
              ...fresh,
              ref: -1 - i,
            })),
          },
        },
      },
    );
    const answer = await post(`${faulty.service.baseUrl}/sms`, sms("over the bound"), account);
    expect(answer.status).toBe(503);
    expect(answer.retryAfter).not.toBeNull();
    expect(answer.body).toEqual({ errors: { request: [expect.stringContaining("retry")] } });
    const batch = await post(
      `${faulty.service.baseUrl}/sms-batch`,
      { messages: [sms("over the bound")] },
      account,
    );
    expect(batch.status).toBe(503);
    expect(await faulty.direct.messages.countDocuments({ text: "over the bound" })).toBe(0);
    // The settler clears them (nothing stored, nothing to refund); sends go through again.
    expect(await settled()).toBe(credit);
    expect((await post(`${faulty.service.baseUrl}/sms`, sms("after"), account)).status).toBe(200);
  });
});
