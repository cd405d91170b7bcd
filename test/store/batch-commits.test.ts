import { describe, expect, it } from "vitest";
import { claimDueDeliveries } from "../../src/delivery/delivery-claims.ts";
import { claimDueNotifications } from "../../src/notifier/claiming.ts";
import {
  BatchCommits,
  discardBatch,
  insertChunks,
  storeBatch,
} from "../../src/store/batch-commits.ts";
import type { MessageDoc } from "../../src/store/documents.ts";
import { acceptedMessage } from "../../src/store/messages.ts";
import { commitBatch } from "../support/batches.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();

describe("a batch commits when its document is stored", () => {
  it("nobody delivers or notifies its messages before that, and both do after", async () => {
    const messages = [1, 2, 3].map((id) =>
      acceptedMessage(
        {
          id,
          accountId: "a",
          batchId: 5,
          to: "+4915112345678",
          from: "X",
          text: "t",
          parts: 1,
          ttl: 60,
        },
        new Date(Date.now() - 1000),
      ),
    );
    await fixture.store.messages.insertMany(messages);
    const commits = new BatchCommits(fixture.store.batches);
    const claim = (token: string) => ({
      now: new Date(),
      limit: 100,
      leaseMs: 10_000,
      token,
      commits,
    });

    expect(await claimDueDeliveries(fixture.store.messages, claim("d1"))).toEqual([]);
    expect(await claimDueNotifications(fixture.store.messages, claim("n1"))).toEqual([]);
    // Put back for a moment, not leased away.
    const putBack = await fixture.store.messages.findOne({ _id: 1 });
    expect(putBack?.deliveryLease).toBeUndefined();
    expect(putBack?.notifyLease).toBeUndefined();

    await commitBatch(fixture.store, 5);
    const later = () => ({ ...claim("d2"), now: new Date(Date.now() + 1000) });
    expect(
      (await claimDueDeliveries(fixture.store.messages, later())).map((m) => m._id).sort(),
    ).toEqual([1, 2, 3]);
    expect(
      (await claimDueNotifications(fixture.store.messages, { ...later(), token: "n2" }))
        .map((m) => m._id)
        .sort(),
    ).toEqual([1, 2, 3]);
  });
});

describe("storing a batch", () => {
  const batchOf = (batchId: number, firstId: number, count: number) => ({
    batch: {
      _id: batchId,
      accountId: "a",
      name: "slices",
      totalCount: count,
      acceptedCount: count,
      rejectedCount: 0,
      createdAt: new Date(),
    },
    messages: Array.from({ length: count }, (_, i) =>
      acceptedMessage(
        {
          id: firstId + i,
          accountId: "a",
          batchId,
          to: "+4915112345678",
          from: "X",
          text: "t",
          parts: 1,
          ttl: 60,
        },
        new Date(),
      ),
    ),
  });

  it("stores every message, however it is sliced, and then the batch document", async () => {
    const { batch, messages } = batchOf(20, 10_000, 4321);

    await storeBatch(fixture.store, messages, batch);

    expect(await fixture.store.messages.countDocuments({ batchId: 20 })).toBe(4321);
    expect(await fixture.store.batches.findOne({ _id: 20 })).toMatchObject({ name: "slices" });
  });

  it("fails when a slice fails, and storing no batch document leaves the batch uncommitted", async () => {
    const { batch, messages } = batchOf(21, 20_000, 3000);
    // A message of another batch already holds an id of the last slice.
    await fixture.store.messages.insertOne({ ...(messages[2999] as MessageDoc), batchId: 99 });

    await expect(storeBatch(fixture.store, messages, batch)).rejects.toThrow(/duplicate key/i);

    expect(await fixture.store.batches.findOne({ _id: 21 })).toBeNull();
  });

  it("cuts the messages into chunks of at most 1000 and about 1 MiB, in order", () => {
    const short = batchOf(23, 40_000, 4321).messages;
    const shortChunks = [...insertChunks(short)];
    expect(shortChunks.map((c) => c.length)).toEqual([1000, 1000, 1000, 1000, 321]);
    expect(shortChunks.flat()).toEqual(short);
    // 1530 characters, split in parts: counted up to 3 bytes each, twice (text and segments).
    const text = "é".repeat(1530);
    const long = short.slice(0, 1000).map((m) => ({
      ...m,
      text,
      segments: [{ id: m._id + 1, text }],
    }));
    const longChunks = [...insertChunks(long)];
    expect(longChunks.flat()).toEqual(long);
    for (const chunk of longChunks) expect(chunk.length).toBeLessThanOrEqual(110);
    expect(longChunks.length).toBeGreaterThanOrEqual(10);
    expect([...insertChunks([])]).toEqual([]);
  });

  it("discarding a batch removes its document and its messages, and nothing else", async () => {
    const { batch, messages } = batchOf(22, 30_000, 1200);
    await storeBatch(fixture.store, messages, batch);

    await discardBatch(fixture.store, 22);

    expect(await fixture.store.batches.findOne({ _id: 22 })).toBeNull();
    expect(await fixture.store.messages.countDocuments({ batchId: 22 })).toBe(0);
    expect(await fixture.store.messages.countDocuments({ batchId: 99 })).toBe(1);
  });
});
