import { describe, expect, it } from "vitest";
import {
  findInboundPage,
  getInboundMessage,
  type InboundMessageDoc,
  inboundMessagesCollection,
  REDELIVERY_WINDOW_MS,
  storeInboundMessages,
} from "../../src/store/inbound-messages.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
let nextId = 1;

function inbound(
  fields: Partial<InboundMessageDoc> & { dedupeKey: string },
): InboundMessageDoc & { dedupeKey: string } {
  return {
    _id: nextId++,
    accountId: "acct-1",
    from: "+4915100000001",
    to: "+4930000001",
    text: "hello",
    parts: 1,
    receivedAt: new Date(1_700_000_000_000),
    carrier: "test",
    ...fields,
  };
}

describe("inbound message store", () => {
  it("keeps one message for an MO stored again within 10 minutes, a new one after", async () => {
    const db = fixture.store.db;
    const at = new Date(1_700_000_000_000);
    const [first] = await storeInboundMessages(
      db,
      [inbound({ dedupeKey: "k1", receivedAt: at })],
      at,
    );
    const soon = new Date(at.getTime() + REDELIVERY_WINDOW_MS - 1);
    // The same MO twice in one batch and once more later: all three are the first message.
    const again = await storeInboundMessages(
      db,
      [
        inbound({ dedupeKey: "k1", receivedAt: soon }),
        inbound({ dedupeKey: "k1", receivedAt: soon }),
        inbound({ dedupeKey: "k2", receivedAt: soon }),
      ],
      soon,
    );
    expect(again.map((m) => m._id)).toEqual([first?._id, first?._id, again[2]?._id]);
    expect(again[2]?._id).not.toBe(first?._id);
    const later = new Date(at.getTime() + REDELIVERY_WINDOW_MS + 1);
    const [fresh] = await storeInboundMessages(
      db,
      [inbound({ dedupeKey: "k1", receivedAt: later })],
      later,
    );
    expect(fresh?._id).not.toBe(first?._id);
    const stored = await inboundMessagesCollection(db)
      .find({ _id: { $in: [first?._id ?? 0, fresh?._id ?? 0] } }, { sort: { _id: 1 } })
      .toArray();
    expect(stored.map((m) => m.dedupeKey)).toEqual([undefined, "k1"]);
  });

  it("lists an account's messages newest first, by sender, number and time, page by page", async () => {
    const db = fixture.store.db;
    const base = 1_800_000_000_000;
    const docs = Array.from({ length: 7 }, (_, i) =>
      inbound({
        dedupeKey: `list-${i}`,
        accountId: "acct-list",
        from: i % 2 ? "+4915100000002" : "+4915100000003",
        to: i < 4 ? "+4930000001" : "12345",
        // Two share a time: the id breaks the tie.
        receivedAt: new Date(base + Math.min(i, 5) * 1000),
      }),
    );
    await storeInboundMessages(db, docs, new Date(base));
    await storeInboundMessages(
      db,
      [inbound({ dedupeKey: "other", accountId: "acct-z" })],
      new Date(base),
    );
    const all: number[] = [];
    let after: [number, number] | undefined;
    for (;;) {
      const page = await findInboundPage(db, { accountId: "acct-list" }, after, 3);
      all.push(...page.slice(0, 3).map((m) => m._id));
      if (page.length <= 3) break;
      const last = page[2] as InboundMessageDoc;
      after = [last.receivedAt.getTime(), last._id];
    }
    const ids = docs.map((d) => d._id);
    expect(all).toEqual([ids[6], ids[5], ids[4], ids[3], ids[2], ids[1], ids[0]]);
    const fromTwo = await findInboundPage(
      db,
      { accountId: "acct-list", from: "+4915100000002" },
      undefined,
      10,
    );
    expect(fromTwo.map((m) => m._id)).toEqual([ids[5], ids[3], ids[1]]);
    const toShort = await findInboundPage(
      db,
      { accountId: "acct-list", to: "12345" },
      undefined,
      10,
    );
    expect(toShort.map((m) => m._id)).toEqual([ids[6], ids[5], ids[4]]);
    const window = await findInboundPage(
      db,
      { accountId: "acct-list", start: new Date(base + 1000), end: new Date(base + 3000) },
      undefined,
      10,
    );
    expect(window.map((m) => m._id)).toEqual([ids[2], ids[1]]);
    expect(window[0]?.dedupeKey).toBeUndefined();
  });

  it("reads one message only for its own account", async () => {
    const db = fixture.store.db;
    const [doc] = await storeInboundMessages(
      db,
      [inbound({ dedupeKey: "own", accountId: "acct-own" })],
      new Date(),
    );
    expect((await getInboundMessage(db, "acct-own", doc?._id ?? 0))?.text).toBe("hello");
    expect(await getInboundMessage(db, "acct-other", doc?._id ?? 0)).toBeNull();
  });
});
