/**
 * Withdrawals of accepted messages whose recipient opted out (opt-outs/withdrawals.ts): the credit
 * comes back exactly once, also when a crash cuts the withdrawal short and the settler finishes
 * it, and also when two withdrawals of one message race.
 */

import { describe, expect, it } from "vitest";
import { OPTED_OUT_ERROR, withdrawMessages } from "../../src/opt-outs/withdrawals.ts";
import { createAccount } from "../../src/store/accounts.ts";
import { settleAbandonedCharges } from "../../src/store/charge-settler.ts";
import type { PendingCharge } from "../../src/store/documents.ts";
import { acceptedMessage } from "../../src/store/messages.ts";
import { changeStatus } from "../../src/store/status-changes.ts";
import { nextTestId } from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
const PRICE = 2_000_000;
const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000);

async function accountWithMessages(parts: number[]) {
  const { account } = await createAccount(fixture.store.accounts, { name: "a", creditMicros: 0 });
  const docs = parts.map((n) =>
    acceptedMessage(
      {
        id: 7_000_000 + nextTestId(),
        accountId: account._id,
        to: "+4915112345678",
        from: "SMSINFO",
        text: "hi",
        parts: n,
        ttl: 600,
      },
      new Date(),
    ),
  );
  await fixture.store.messages.insertMany(docs);
  return { accountId: account._id, ids: docs.map((d) => d._id) };
}

const account = (id: string) => fixture.store.accounts.findOne({ _id: id });

/** What a withdrawal had written when the process died: its refund, and maybe its status change. */
async function cutShort(accountId: string, ids: number[], parts: number[], marked: boolean) {
  const refund: PendingCharge = {
    ref: 424242 + nextTestId(),
    kind: "refund",
    amountMicros: parts.reduce((sum, n) => sum + n * PRICE, 0),
    at: minutesAgo(10),
    messages: ids.map((id, i) => ({ id, amountMicros: (parts[i] ?? 1) * PRICE })),
  };
  await fixture.store.accounts.updateOne({ _id: accountId }, { $push: { pendingCharges: refund } });
  if (marked) {
    await changeStatus(
      fixture.store.messages,
      ids,
      ["ACCEPTED"],
      {
        status: "SEND_ERROR",
        set: { sendError: OPTED_OUT_ERROR, withdrawal: refund.ref },
        unset: ["deliveryAt", "deliveryLease"],
      },
      minutesAgo(10),
    );
  }
}

describe("withdrawMessages", () => {
  it("ends the messages SEND_ERROR and credits their price per part, nothing left pending", async () => {
    const { accountId, ids } = await accountWithMessages([1, 3]);
    const withdrawn = await withdrawMessages(
      fixture.store,
      accountId,
      [
        { _id: ids[0] ?? 0, parts: 1 },
        { _id: ids[1] ?? 0, parts: 3 },
      ],
      PRICE,
      new Date(),
    );
    expect(withdrawn.sort()).toEqual([...ids].sort());
    expect(await account(accountId)).toMatchObject({ creditMicros: 4 * PRICE, pendingCharges: [] });
    // Withdrawn already: a second withdrawal changes and credits nothing.
    expect(
      await withdrawMessages(
        fixture.store,
        accountId,
        [{ _id: ids[0] ?? 0, parts: 1 }],
        PRICE,
        new Date(),
      ),
    ).toEqual([]);
    expect(await account(accountId)).toMatchObject({ creditMicros: 4 * PRICE, pendingCharges: [] });
  });

  it("two withdrawals of the same messages at once credit them once", async () => {
    const { accountId, ids } = await accountWithMessages([1, 1, 1, 1]);
    const all = ids.map((id) => ({ _id: id, parts: 1 }));
    const results = await Promise.all([
      withdrawMessages(fixture.store, accountId, all, PRICE, new Date()),
      withdrawMessages(fixture.store, accountId, [...all].reverse(), PRICE, new Date()),
    ]);
    expect(results.flat().sort()).toEqual([...ids].sort());
    expect(await account(accountId)).toMatchObject({ creditMicros: 4 * PRICE, pendingCharges: [] });
  });
});

describe("a withdrawal cut short by a crash", () => {
  it("after its status change: the settler credits the withdrawn messages once", async () => {
    const { accountId, ids } = await accountWithMessages([2, 1]);
    await cutShort(accountId, ids, [2, 1], true);
    const settled = await settleAbandonedCharges(fixture.store, 60_000, new Date());
    expect(settled.refunded).toBeGreaterThanOrEqual(1);
    expect(await account(accountId)).toMatchObject({ creditMicros: 3 * PRICE, pendingCharges: [] });
    await settleAbandonedCharges(fixture.store, 60_000, new Date());
    expect((await account(accountId))?.creditMicros).toBe(3 * PRICE);
  });

  it("before its status change: the settler drops the refund, the messages stay to be sent", async () => {
    const { accountId, ids } = await accountWithMessages([1]);
    await cutShort(accountId, ids, [1], false);
    await settleAbandonedCharges(fixture.store, 60_000, new Date());
    expect(await account(accountId)).toMatchObject({ creditMicros: 0, pendingCharges: [] });
    const doc = await fixture.store.messages.findOne({ _id: ids[0] });
    expect(doc?.status).toBe("ACCEPTED");
  });
});
