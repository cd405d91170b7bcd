import { describe, expect, it } from "vitest";
import { createAccount } from "../../src/store/accounts.ts";
import { discardBatch } from "../../src/store/batch-commits.ts";
import { ChargeConfirmations } from "../../src/store/charge-confirmations.ts";
import { settleAbandonedCharges } from "../../src/store/charge-settler.ts";
import {
  chargeThenStore,
  debit,
  MAX_PENDING_CHARGES,
  settleCharge,
} from "../../src/store/charges.ts";
import type { PendingCharge } from "../../src/store/documents.ts";
import { acceptedMessage } from "../../src/store/messages.ts";
import { pushPendingRefund } from "../../src/store/refunds.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();

const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000);

async function newAccount(credit: number) {
  const { account } = await createAccount(fixture.store.accounts, {
    name: "a",
    creditMicros: credit,
  });
  return account._id;
}

function message(id: number, accountId: string, batchId?: number) {
  return acceptedMessage(
    {
      id,
      accountId,
      to: "+4915112345678",
      from: "SMSINFO",
      text: "hi",
      parts: 1,
      ttl: 60,
      ...(batchId && { batchId }),
    },
    new Date(),
  );
}

/** A batch store that stores one message of the batch and then fails. */
const storeOneThenFail = (messageId: number, apiKey: string, batchId: number) => async () => {
  await fixture.store.messages.insertOne(message(messageId, apiKey, batchId));
  throw new Error("the second slice failed");
};

/** The account's credit is whole again and nothing of it is pending. */
async function expectRefunded(apiKey: string, credit: number) {
  const account = await fixture.store.accounts.findOne({ _id: apiKey });
  expect(account?.creditMicros).toBe(credit);
  expect(account?.pendingCharges).toEqual([]);
}

describe("credit charges", () => {
  it("debit refuses to go below zero and changes nothing then", async () => {
    const apiKey = await newAccount(5);
    const charge: PendingCharge = { ref: 1, kind: "message", amountMicros: 6, at: new Date() };
    expect(await debit(fixture.store.accounts, apiKey, charge)).toBe("insufficient");
    const account = await fixture.store.accounts.findOne({ _id: apiKey });
    expect(account?.creditMicros).toBe(5);
    expect(account?.pendingCharges).toEqual([]);
  });

  it("a confirmed charge leaves no pending record", async () => {
    const apiKey = await newAccount(10);
    const charge: PendingCharge = { ref: 11, kind: "message", amountMicros: 3, at: new Date() };
    expect(await debit(fixture.store.accounts, apiKey, charge)).toEqual({ creditMicros: 7 });
    const confirmations = new ChargeConfirmations(fixture.store);
    confirmations.add(apiKey, charge);
    await confirmations.flush();
    expect((await fixture.store.accounts.findOne({ _id: apiKey }))?.pendingCharges).toEqual([]);
  });

  it("a crash between debit and store is refunded; a stored message keeps its charge", async () => {
    const apiKey = await newAccount(100);
    await debit(fixture.store.accounts, apiKey, {
      ref: 21,
      kind: "message",
      amountMicros: 10,
      at: minutesAgo(5),
    });
    await debit(fixture.store.accounts, apiKey, {
      ref: 22,
      kind: "message",
      amountMicros: 20,
      at: minutesAgo(5),
    });
    await fixture.store.messages.insertOne(message(22, apiKey));

    const settled = await settleAbandonedCharges(fixture.store, 120_000);
    expect(settled).toMatchObject({ refunded: 1, confirmed: 1 });
    const account = await fixture.store.accounts.findOne({ _id: apiKey });
    expect(account?.creditMicros).toBe(80);
    expect(account?.pendingCharges).toEqual([]);
  });

  it("a batch whose document was never stored is rolled back; a committed one is kept", async () => {
    const apiKey = await newAccount(100);
    await debit(fixture.store.accounts, apiKey, {
      ref: 31,
      kind: "batch",
      amountMicros: 2,
      at: minutesAgo(5),
    });
    await fixture.store.messages.insertMany([message(301, apiKey, 31), message(302, apiKey, 31)]);
    await debit(fixture.store.accounts, apiKey, {
      ref: 32,
      kind: "batch",
      amountMicros: 1,
      at: minutesAgo(5),
    });
    await fixture.store.messages.insertMany([message(303, apiKey, 32)]);
    await fixture.store.batches.insertOne({
      _id: 32,
      accountId: apiKey,
      name: "",
      totalCount: 1,
      acceptedCount: 1,
      rejectedCount: 0,
      createdAt: new Date(),
    });

    await settleAbandonedCharges(fixture.store, 120_000);
    expect(await fixture.store.messages.countDocuments({ batchId: 31 })).toBe(0);
    expect(await fixture.store.messages.countDocuments({ batchId: 32 })).toBe(1);
    expect((await fixture.store.accounts.findOne({ _id: apiKey }))?.creditMicros).toBe(99);
  });

  it("a store that fails is undone and refunded", async () => {
    const apiKey = await newAccount(50);
    const charge: PendingCharge = { ref: 51, kind: "batch", amountMicros: 7, at: new Date() };
    const storeHalf = storeOneThenFail(501, apiKey, 51);

    await expect(
      chargeThenStore(fixture.store, apiKey, charge, storeHalf, () =>
        discardBatch(fixture.store, 51),
      ),
    ).rejects.toThrow("the second slice failed");

    expect(await fixture.store.messages.countDocuments({ batchId: 51 })).toBe(0);
    await expectRefunded(apiKey, 50);
  });

  it("a store whose undo fails too keeps its charge pending, for the settler to roll back", async () => {
    const apiKey = await newAccount(50);
    const charge: PendingCharge = { ref: 52, kind: "batch", amountMicros: 7, at: minutesAgo(5) };
    const storeHalf = storeOneThenFail(502, apiKey, 52);
    const undoFails = async () => {
      throw new Error("database gone");
    };

    await expect(
      chargeThenStore(fixture.store, apiKey, charge, storeHalf, undoFails),
    ).rejects.toThrow("the second slice failed");
    expect((await fixture.store.accounts.findOne({ _id: apiKey }))?.creditMicros).toBe(43);

    await settleAbandonedCharges(fixture.store, 120_000);
    expect(await fixture.store.messages.countDocuments({ batchId: 52 })).toBe(0);
    await expectRefunded(apiKey, 50);
  });

  it("leaves young pending charges alone: their requests may still be storing", async () => {
    const apiKey = await newAccount(10);
    await debit(fixture.store.accounts, apiKey, {
      ref: 41,
      kind: "message",
      amountMicros: 1,
      at: new Date(),
    });
    await settleAbandonedCharges(fixture.store, 120_000);
    const account = await fixture.store.accounts.findOne({ _id: apiKey });
    expect(account?.creditMicros).toBe(9);
    expect(account?.pendingCharges).toHaveLength(1);
  });

  it("settles a group of single sends message by message: stored ones stay charged", async () => {
    const apiKey = await newAccount(100);
    await debit(fixture.store.accounts, apiKey, {
      ref: 61,
      kind: "message",
      amountMicros: 6,
      at: minutesAgo(5),
      messages: [
        { id: 61, amountMicros: 1 },
        { id: 62, amountMicros: 2 },
        { id: 63, amountMicros: 3 },
      ],
    });
    await fixture.store.messages.insertOne(message(62, apiKey));
    expect(await settleAbandonedCharges(fixture.store, 120_000)).toMatchObject({
      confirmed: 1,
      refunded: 2,
    });
    await expectRefunded(apiKey, 98);
  });

  it(`refuses a debit as busy once ${MAX_PENDING_CHARGES} charges are pending, charging nothing`, async () => {
    const apiKey = await newAccount(1000);
    await fixture.store.accounts.updateOne(
      { _id: apiKey },
      {
        $push: {
          pendingCharges: {
            $each: Array.from({ length: MAX_PENDING_CHARGES }, (_, i) => ({
              ref: 10_000 + i,
              kind: "message" as const,
              amountMicros: 0,
              at: new Date(),
            })),
          },
        },
      },
    );
    const charge: PendingCharge = { ref: 71, kind: "message", amountMicros: 1, at: new Date() };
    expect(await debit(fixture.store.accounts, apiKey, charge)).toBe("busy");
    const account = await fixture.store.accounts.findOne({ _id: apiKey });
    expect(account?.creditMicros).toBe(1000);
    expect(account?.pendingCharges).toHaveLength(MAX_PENDING_CHARGES);
  });

  it("never refuses a debit as busy while the account's own refunds and confirmations settle", async () => {
    // What a cancel (or a workers' refund) and a batch's confirmation write to the account
    // document only raise its credit and shorten its pending list: they never make a debit's
    // filter fail, so they never turn a debit into ACCOUNT_BUSY (a 503).
    const start = 1_000_000_000;
    const apiKey = await newAccount(start);
    const confirmations = new ChargeConfirmations(fixture.store);
    let refunds = 0;
    let batches = 0;
    const refunding = async () => {
      for (let i = 0; i < 60; i++) {
        const refund = await pushPendingRefund(
          fixture.store.accounts,
          apiKey,
          [{ id: i, amountMicros: 5 }],
          new Date(),
        );
        await settleCharge(fixture.store, apiKey, refund, refund.amountMicros);
        refunds++;
      }
    };
    const debiting = async (first: number) => {
      for (let ref = first; ref < first + 60; ref++) {
        const charge: PendingCharge = { ref, kind: "batch", amountMicros: 300, at: new Date() };
        expect(await debit(fixture.store.accounts, apiKey, charge)).toHaveProperty("creditMicros");
        batches++;
        confirmations.add(apiKey, charge);
      }
    };
    await Promise.all([refunding(), refunding(), refunding(), debiting(1), debiting(1001)]);
    await confirmations.flush();
    const account = await fixture.store.accounts.findOne({ _id: apiKey });
    expect(account?.creditMicros).toBe(start - 300 * batches + 5 * refunds);
    expect(account?.pendingCharges).toEqual([]);
  });
});
