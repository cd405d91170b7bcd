import { describe, expect, it } from "vitest";
import { createAccount } from "../../src/store/accounts.ts";
import { ChargeConfirmations } from "../../src/store/charge-confirmations.ts";
import { chargedMessages } from "../../src/store/charges.ts";
import { Deadline, DeadlineExceeded } from "../../src/store/deadline.ts";
import type { PendingCharge } from "../../src/store/documents.ts";
import { MessageWriter } from "../../src/store/message-writer.ts";
import { acceptedMessage } from "../../src/store/messages.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();

function newWriter() {
  const confirmations = new ChargeConfirmations(fixture.store);
  return new MessageWriter(fixture.store, fixture.store.messages, confirmations);
}

let nextId = 1;
function send(writer: MessageWriter, apiKey: string, amountMicros: number) {
  const id = nextId++;
  const charge: PendingCharge = { ref: id, kind: "message", amountMicros, at: new Date() };
  const doc = acceptedMessage(
    { id, accountId: apiKey, to: "+4915112345678", from: "SMSINFO", text: "hi", parts: 1, ttl: 60 },
    new Date(),
  );
  return writer
    .write(apiKey, charge.amountMicros, doc, Deadline.in(10_000))
    .then((result) => ({ id, result }));
}

describe("group commit of single sends", () => {
  it("charges concurrent sends exactly: credit never below zero, every stored message paid", async () => {
    const { account } = await createAccount(fixture.store.accounts, {
      name: "a",
      creditMicros: 25,
    });
    const writer = newWriter();
    const results = await Promise.all(
      Array.from({ length: 40 }, () => send(writer, account._id, 1)),
    );
    const accepted = results.filter((r) => r.result !== "insufficient");
    expect(accepted).toHaveLength(25);
    expect(await fixture.store.messages.countDocuments({ accountId: account._id })).toBe(25);
    expect((await fixture.store.accounts.findOne({ _id: account._id }))?.creditMicros).toBe(0);
    // Each answer is the credit left after its own charge: all different, from 24 down to 0.
    const remaining = accepted.map((r) => (r.result as { creditMicros: number }).creditMicros);
    expect(new Set(remaining).size).toBe(25);
    expect(Math.min(...remaining)).toBe(0);
    expect(Math.max(...remaining)).toBe(24);
  });

  it("writes the sends of several accounts in one group, each charged to its own account", async () => {
    const a = (await createAccount(fixture.store.accounts, { name: "a", creditMicros: 100 }))
      .account._id;
    const b = (await createAccount(fixture.store.accounts, { name: "b", creditMicros: 100 }))
      .account._id;
    const writer = newWriter();
    await Promise.all([
      ...Array.from({ length: 10 }, () => send(writer, a, 3)),
      ...Array.from({ length: 5 }, () => send(writer, b, 7)),
    ]);
    expect((await fixture.store.accounts.findOne({ _id: a }))?.creditMicros).toBe(70);
    expect((await fixture.store.accounts.findOne({ _id: b }))?.creditMicros).toBe(65);
    expect(await fixture.store.messages.countDocuments({ accountId: { $in: [a, b] } })).toBe(15);
  });

  it("refuses a send whose deadline passed while it was queued, and charges nothing", async () => {
    const { account } = await createAccount(fixture.store.accounts, {
      name: "a",
      creditMicros: 10,
    });
    const writer = newWriter();
    const doc = acceptedMessage(
      {
        id: nextId++,
        accountId: account._id,
        to: "+4915112345678",
        from: "X",
        text: "x",
        parts: 1,
        ttl: 60,
      },
      new Date(),
    );
    await expect(writer.write(account._id, 2, doc, new Deadline(Date.now() - 1))).rejects.toThrow(
      DeadlineExceeded,
    );
    const stored = await fixture.store.accounts.findOne({ _id: account._id });
    expect(stored?.creditMicros).toBe(10);
    expect(stored?.pendingCharges).toEqual([]);
    expect(await fixture.store.messages.countDocuments({ _id: doc._id })).toBe(0);
  });

  it("records one pending charge per group, however many sends it holds", async () => {
    const { account } = await createAccount(fixture.store.accounts, {
      name: "a",
      creditMicros: 1000,
    });
    // Confirmations left out: what the account holds is what the debits wrote.
    const writer = new MessageWriter(
      fixture.store,
      fixture.store.messages,
      new (class extends ChargeConfirmations {
        override add(): void {}
      })(fixture.store),
    );
    await Promise.all(Array.from({ length: 60 }, () => send(writer, account._id, 1)));
    const stored = await fixture.store.accounts.findOne({ _id: account._id });
    expect(stored?.creditMicros).toBe(940);
    // The first send is a group of one; the others queue behind it and go in at most two groups.
    expect(stored?.pendingCharges.length).toBeLessThanOrEqual(3);
    const charged = (stored?.pendingCharges ?? []).flatMap((c) => chargedMessages(c));
    expect(charged).toHaveLength(60);
  });

  it("a send held to an opt-out list version that has moved is answered stale: nothing stored or charged", async () => {
    const { account } = await createAccount(fixture.store.accounts, {
      name: "listed",
      creditMicros: 100,
    });
    const writer = newWriter();
    const write = (listVersion?: number) => writeTo(writer, account._id, 10, listVersion);
    // The list never changed: version 0 holds.
    expect(await write(0)).toEqual({ creditMicros: 90 });
    await fixture.store.accounts.updateOne({ _id: account._id }, { $inc: { optOutsVersion: 1 } });
    // Sent together: the one that saw version 0 is stale, the others are written.
    const [stale, unconditional, current] = await Promise.all([write(0), write(), write(1)]);
    expect(stale).toBe("stale");
    expect(unconditional).not.toBe("stale");
    expect(current).not.toBe("stale");
    expect(await write(0)).toBe("stale");
    expect(await fixture.store.messages.countDocuments({ accountId: account._id })).toBe(3);
    expect((await fixture.store.accounts.findOne({ _id: account._id }))?.creditMicros).toBe(70);
  });

  it("a group whose sends all saw a version that has moved since charges nothing", async () => {
    const { account } = await createAccount(fixture.store.accounts, {
      name: "moved",
      creditMicros: 100,
    });
    await fixture.store.accounts.updateOne({ _id: account._id }, { $inc: { optOutsVersion: 2 } });
    const writer = newWriter();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => writeTo(writer, account._id, 10, 1)),
    );
    expect(results).toEqual(["stale", "stale", "stale", "stale", "stale"]);
    expect(await fixture.store.messages.countDocuments({ accountId: account._id })).toBe(0);
    const stored = await fixture.store.accounts.findOne({ _id: account._id });
    expect(stored?.creditMicros).toBe(100);
    expect(stored?.pendingCharges).toEqual([]);
  });

  it("a stale send leaves the credit to the other sends of its group", async () => {
    const { account } = await createAccount(fixture.store.accounts, {
      name: "x",
      creditMicros: 10,
    });
    const other = (await createAccount(fixture.store.accounts, { name: "y", creditMicros: 100 }))
      .account._id;
    await fixture.store.accounts.updateOne({ _id: account._id }, { $inc: { optOutsVersion: 1 } });
    const writer = newWriter();
    // A write of another account takes the one group in flight: the next two are one group.
    const [, stale, plain] = await Promise.all([
      send(writer, other, 1),
      writeTo(writer, account._id, 10, 0),
      writeTo(writer, account._id, 10),
    ]);
    expect(stale).toBe("stale");
    expect(plain).toEqual({ creditMicros: 0 });
  });
});

function writeTo(
  writer: MessageWriter,
  apiKey: string,
  amountMicros: number,
  listVersion?: number,
) {
  const id = nextId++;
  const doc = acceptedMessage(
    { id, accountId: apiKey, to: "+4915100000009", from: "SMSINFO", text: "hi", parts: 1, ttl: 60 },
    new Date(),
  );
  return writer.write(apiKey, amountMicros, doc, Deadline.in(10_000), listVersion);
}
