/**
 * The MO intake on the real database: owners, single and long messages, redeliveries, the
 * reassembly sweep, and a database that fails.
 */
import { MongoClient } from "mongodb";
import { pino } from "pino";
import { beforeAll, describe, expect, it } from "vitest";
import { InboundIntake } from "../../src/inbound/intake.ts";
import type { MoPart } from "../../src/inbound/mo-part.ts";
import { encodeGsm7 } from "../../src/smpp/alphabets.ts";
import {
  type InboundMessageDoc,
  inboundMessagesCollection,
} from "../../src/store/inbound-messages.ts";
import { inboundPartsCollection } from "../../src/store/inbound-parts.ts";
import { assignNumber } from "../../src/store/numbers.ts";
import { IdAllocator } from "../../src/store/sequences.ts";
import { testServer } from "../support/database.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
let clock = new Date("2030-01-01T00:00:00Z");
const handed: InboundMessageDoc[] = [];

function intake(options: { reassemblyMs?: number } = {}): InboundIntake {
  return new InboundIntake({
    db: fixture.store.db,
    now: () => clock,
    ids: new IdAllocator(fixture.store.counters, "inbound", 10),
    logger: pino({ level: "silent" }),
    onInbound: async (message) => {
      handed.push(message);
    },
    reassemblyMs: options.reassemblyMs ?? 1_800_000,
    defaultAlphabet: "gsm7",
  });
}

function mo(to: string, text: string, fields: Partial<MoPart> = {}): MoPart {
  return {
    carrier: "smpp:test",
    from: "+4915112345678",
    to,
    dataCoding: 0,
    payload: encodeGsm7(text) as Buffer,
    ...fields,
  };
}

/** The parts of a long GSM text, `size` septets each, with an 8-bit reference. */
function longMo(
  to: string,
  text: string,
  size: number,
  ref: number,
  from = "+4915112345678",
): MoPart[] {
  const bytes = encodeGsm7(text) as Buffer;
  const total = Math.ceil(bytes.length / size);
  return Array.from({ length: total }, (_, i) =>
    mo(to, "", {
      from,
      payload: bytes.subarray(i * size, (i + 1) * size),
      concatenation: { ref, refBits: 8, total, seq: i + 1 },
    }),
  );
}

const messagesTo = (to: string) =>
  inboundMessagesCollection(fixture.store.db)
    .find({ to }, { sort: { _id: 1 } })
    .toArray();

beforeAll(async () => {
  await assignNumber(fixture.store.db, "acct-in", "+4930000001");
  await assignNumber(fixture.store.db, "acct-in", "+4930000002");
  await assignNumber(fixture.store.db, "acct-in", "+4930000003");
  await assignNumber(fixture.store.db, "acct-short", "12345");
});

describe("MO intake", () => {
  it("stores an MO for the number's account, in any written form, and refuses one nobody owns", async () => {
    const taker = intake();
    handed.length = 0;
    const outcomes = await taker.take([
      mo("4930000001", "Hello @ there"),
      mo("+4930000001", "Stop."),
      mo("12345", "short code"),
      mo("4930999999", "nobody's"),
    ]);
    expect(outcomes).toEqual(["stored", "stored", "stored", "unowned"]);
    const stored = await messagesTo("+4930000001");
    expect(stored.map((m) => [m.accountId, m.from, m.text, m.parts, m.optOutType])).toEqual([
      ["acct-in", "+4915112345678", "Hello @ there", 1, undefined],
      ["acct-in", "+4915112345678", "Stop.", 1, "STOP"],
    ]);
    expect((await messagesTo("12345"))[0]?.accountId).toBe("acct-short");
    expect(
      await inboundMessagesCollection(fixture.store.db).countDocuments({
        to: { $regex: "999999" },
      }),
    ).toBe(0);
    expect(handed.map((m) => m.text)).toEqual(["Hello @ there", "Stop.", "short code"]);
    expect(taker.stats()).toMatchObject({ messages: 3, unowned: 1, redelivered: 0 });
  });

  it("keeps a redelivered MO as one message and hands it to the hook again", async () => {
    const taker = intake();
    handed.length = 0;
    const once = mo("+4930000002", "once");
    await taker.take([once]);
    await taker.take([once, { ...once }]);
    const stored = await messagesTo("+4930000002");
    expect(stored).toHaveLength(1);
    expect(handed.map((m) => m._id)).toEqual([stored[0]?._id, stored[0]?._id, stored[0]?._id]);
    expect(taker.stats()).toMatchObject({ messages: 1, redelivered: 2 });
  });

  it("assembles a long MO from parts in any order, repeated, over several batches and intakes", async () => {
    const text = "This is a long message € with escapes {and} more text to fill three parts";
    const parts = longMo("+4930000003", text, 30, 0x42);
    expect(parts).toHaveLength(3);
    const [p1, p2, p3] = parts as [MoPart, MoPart, MoPart];
    handed.length = 0;
    expect(await intake().take([p3, p3])).toEqual(["stored", "stored"]);
    expect(await intake().take([p1])).toEqual(["stored"]);
    expect(await messagesTo("+4930000003")).toHaveLength(0);
    // The last part on two connections at once: one message.
    await Promise.all([intake().take([p2]), intake().take([p2, p1])]);
    const stored = await messagesTo("+4930000003");
    expect(stored.map((m) => [m.text, m.parts, m.incomplete])).toEqual([[text, 3, undefined]]);
    expect(handed.every((m) => m._id === stored[0]?._id)).toBe(true);
    // The parts made it: closed, and a late redelivery of one is no new message.
    const waiting = await inboundPartsCollection(fixture.store.db).countDocuments({
      to: "+4930000003",
      open: true,
    });
    expect(waiting).toBe(0);
    // ... but its message goes to the hook again (a crash may have come between the two).
    const handedBefore = handed.length;
    await intake().take([p1]);
    await intake().sweep();
    expect(await messagesTo("+4930000003")).toHaveLength(1);
    expect(handed.slice(handedBefore).map((m) => m._id)).toEqual([stored[0]?._id]);
  });

  it("delivers parts still missing others after SMS_MO_REASSEMBLY_S as one incomplete message", async () => {
    await assignNumber(fixture.store.db, "acct-in", "+4930000004");
    const taker = intake({ reassemblyMs: 120_000 });
    const parts = longMo("+4930000004", "first part, second part, third part", 12, 7);
    await taker.take([parts[0] as MoPart, parts[2] as MoPart]);
    clock = new Date(clock.getTime() + 90_000);
    expect(await taker.sweep()).toBe(0);
    clock = new Date(clock.getTime() + 31_000);
    expect(await taker.sweep()).toBe(1);
    const stored = await messagesTo("+4930000004");
    expect(stored.map((m) => [m.text, m.parts, m.incomplete])).toEqual([
      ["first part,  third part", 2, true],
    ]);
    expect(taker.stats()).toMatchObject({ incomplete: 1 });
  });

  it("assembles in the sweep a whole message whose assembly a crash interrupted", async () => {
    await assignNumber(fixture.store.db, "acct-in", "+4930000005");
    const parts = longMo("+4930000005", "two parts of one message", 12, 9);
    await intake().take(parts);
    // As if the process died after storing the parts: reopened, message gone.
    await inboundMessagesCollection(fixture.store.db).deleteMany({ to: "+4930000005" });
    await inboundPartsCollection(fixture.store.db).updateMany(
      { to: "+4930000005" },
      { $set: { open: true }, $unset: { inboundId: "", expireAt: "" } },
    );
    clock = new Date(clock.getTime() + 61_000);
    await intake().sweep();
    expect((await messagesTo("+4930000005")).map((m) => m.text)).toEqual([
      "two parts of one message",
    ]);
  });

  it("throws, storing nothing it answers for, when the database cannot be reached", async () => {
    const client = new MongoClient(testServer().uri, { serverSelectionTimeoutMS: 500 });
    const db = client.db(fixture.store.db.databaseName);
    await client.close();
    const broken = new InboundIntake({
      db,
      now: () => clock,
      ids: new IdAllocator(fixture.store.counters, "inbound"),
      logger: pino({ level: "silent" }),
      reassemblyMs: 1_800_000,
      defaultAlphabet: "gsm7",
    });
    await expect(broken.take([mo("+4930000001", "lost?")])).rejects.toThrow();
  });
});
