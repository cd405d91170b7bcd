/**
 * Mobile-originated messages over real SMPP (issue 26, item 2): the test SMSC (jsmpp) sends every
 * variant - deliver_sm and data_sm, data_coding 0, 1, 3 and 8, long messages with 8-bit and 16-bit
 * UDH references and with SAR TLVs, in any order, repeated - to the SMPP adapter, whose intake
 * stores them on the test database; each part's deliver_sm_resp / data_sm_resp is checked:
 * ESME_ROK once stored, ESME_RX_R_APPN (0x66) for a number nobody owns, ESME_RX_T_APPN (0x64)
 * while the database cannot be reached.
 */
import { type Db, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SmppCarrier } from "../../../src/delivery/smpp-carrier/adapter.ts";
import { InboundIntake } from "../../../src/inbound/intake.ts";
import { encodeGsm7 } from "../../../src/smpp/alphabets.ts";
import {
  type InboundMessageDoc,
  inboundMessagesCollection,
} from "../../../src/store/inbound-messages.ts";
import { assignNumber } from "../../../src/store/numbers.ts";
import { IdAllocator } from "../../../src/store/sequences.ts";
import { testServer } from "../../support/database.ts";
import { FaultProxy } from "../../support/fault-proxy.ts";
import { recordingLogger, smppCarrier, waitFor } from "../../support/smpp.ts";
import { type MoOptions, startSmsc, type TestSmsc } from "../../support/smsc.ts";
import { useTestStore } from "../../support/store.ts";

const fixture = useTestStore();
const HANDSET = "+4915112345678";
let smsc: TestSmsc;
let carrier: SmppCarrier;
let intake: InboundIntake;
let proxy: FaultProxy;
let client: MongoClient;
const logger = recordingLogger();
const handed: InboundMessageDoc[] = [];

beforeAll(async () => {
  smsc = await startSmsc();
  // The intake reaches the database through a proxy that can refuse it.
  proxy = await FaultProxy.start(testServer().uri);
  client = new MongoClient(proxy.uri, { serverSelectionTimeoutMS: 1_000 });
  await client.connect();
  const db: Db = client.db(fixture.store.db.databaseName);
  intake = new InboundIntake({
    db,
    now: () => new Date(),
    ids: new IdAllocator(db.collection("counters"), "inbound", 20),
    logger,
    onInbound: async (message) => {
      handed.push(message);
    },
    reassemblyMs: 1_800_000,
    defaultAlphabet: "gsm7",
  });
  for (let n = 1; n <= 12; n++)
    await assignNumber(fixture.store.db, "acct-mo", `+49300000${String(n).padStart(2, "0")}`);
  await assignNumber(fixture.store.db, "acct-mo", "54321");
  carrier = smppCarrier(smsc, { binds: 2, logger, inbound: (parts) => intake.take(parts) });
  await carrier.start(async () => ({}));
  await waitFor(async () => (await smsc.binds()).length === 2, 10_000, "two binds");
}, 120_000);

afterAll(async () => {
  await carrier?.stop();
  await client?.close();
  await proxy?.close();
  await smsc?.stop();
});

const messagesTo = (to: string) =>
  inboundMessagesCollection(fixture.store.db)
    .find({ to }, { sort: { _id: 1 } })
    .toArray();

/** Sends an MO and answers each part's response status, in the order sent. */
async function send(to: string, text: string, options: MoOptions = {}): Promise<(number | null)[]> {
  const result = await smsc.mo(HANDSET, to, text, { waitMs: 10_000, ...options });
  return result.parts.map((part) => part.status);
}

const ucs2 = (text: string) => {
  const bytes = Buffer.alloc(text.length * 2);
  for (let i = 0; i < text.length; i++) bytes.writeUInt16BE(text.charCodeAt(i), i * 2);
  return bytes;
};

describe("MO over SMPP", () => {
  it("stores single deliver_sm and data_sm of every data_coding and answers ESME_ROK", async () => {
    expect(await send("4930000001", "Grüße aus Köln")).toEqual([0]); // data_coding 3
    expect(await send("4930000002", "Hi 😀 there", { command: "data_sm" })).toEqual([0]); // 8
    const gsm = "€ [x] @home_{1}";
    expect(
      await send("4930000003", "", { dataCoding: 0, hex: encodeGsm7(gsm)?.toString("hex") }),
    ).toEqual([0]);
    expect(await send("4930000004", "plain @ ASCII_$", { dataCoding: 1 })).toEqual([0]);
    expect(await send("54321", "STOP", { dataCoding: 0, destTon: 3 })).toEqual([0]); // a short code
    const texts = async (to: string) => (await messagesTo(to)).map((m) => m.text);
    expect(await texts("+4930000001")).toEqual(["Grüße aus Köln"]);
    expect(await texts("+4930000002")).toEqual(["Hi 😀 there"]);
    expect(await texts("+4930000003")).toEqual([gsm]);
    expect(await texts("+4930000004")).toEqual(["plain @ ASCII_$"]);
    const stop = (await messagesTo("54321"))[0];
    expect(stop).toMatchObject({
      accountId: "acct-mo",
      from: HANDSET,
      text: "STOP",
      parts: 1,
      optOutType: "STOP",
    });
    expect(handed.map((m) => m._id)).toContain(stop?._id);
  });

  it("reassembles long MO with 8-bit and 16-bit UDH references and SAR TLVs, in any order, repeated", async () => {
    const latin = "A long message in three parts, sent out of order and with a repeat.";
    expect(
      await send("4930000005", latin, {
        concat: "udh8",
        ref: 200,
        cuts: [20, 45],
        order: [3, 1, 3, 2],
      }),
    ).toEqual([0, 0, 0, 0]);
    // UCS-2 with a surrogate pair cut in two: the pair's first half ends part 1.
    const emoji = "ab😀cd👍🏽ef";
    const bytes = ucs2(emoji);
    expect(
      await send("4930000006", "", {
        dataCoding: 8,
        hex: bytes.toString("hex"),
        concat: "udh16",
        ref: 0xbeef,
        cuts: [6, 16],
        order: [2, 3, 1],
      }),
    ).toEqual([0, 0, 0]);
    expect(
      await send("4930000007", "", {
        command: "data_sm",
        dataCoding: 0,
        hex: encodeGsm7("escapes {split} across € parts")?.toString("hex"),
        concat: "sar",
        ref: 0x1234,
        // 0x1b before "{" is the 9th septet: a cut after it splits the escape from its character.
        cuts: [9, 20],
        order: [3, 2, 2, 1],
      }),
    ).toEqual([0, 0, 0, 0]);
    const one = async (to: string) => (await messagesTo(to)).map((m) => [m.text, m.parts]);
    expect(await one("+4930000005")).toEqual([[latin, 3]]);
    expect(await one("+4930000006")).toEqual([[emoji, 3]]);
    expect(await one("+4930000007")).toEqual([["escapes {split} across € parts", 3]]);
  });

  it("answers ESME_RX_R_APPN for a number nobody owns, logs and counts it", async () => {
    const before = intake.stats().unowned;
    expect(await send("4939999999", "anyone?")).toEqual([0x66]);
    expect(intake.stats().unowned).toBe(before + 1);
    expect(logger.text()).toContain("no account owns");
    expect(await messagesTo("+4939999999")).toHaveLength(0);
  });

  it("keeps an MO delivered twice as one message", async () => {
    expect(await send("4930000008", "twice")).toEqual([0]);
    expect(await send("4930000008", "twice")).toEqual([0]);
    expect((await messagesTo("+4930000008")).map((m) => m.text)).toEqual(["twice"]);
  });

  it("acknowledges a user acknowledgement (esm_class 0x10) without storing it", async () => {
    expect(await send("4930000009", "ack", { esmClass: 0x10 })).toEqual([0]);
    expect(await messagesTo("+4930000009")).toHaveLength(0);
  });

  it("answers ESME_RX_T_APPN while the database cannot be reached, ESME_ROK once it can", async () => {
    proxy.refuse();
    try {
      expect(await send("4930000010", "while down", { waitMs: 20_000 })).toEqual([0x64]);
    } finally {
      proxy.restore();
    }
    expect(await send("4930000010", "while down", { waitMs: 20_000 })).toEqual([0]);
    expect((await messagesTo("+4930000010")).map((m) => m.text)).toEqual(["while down"]);
  });
});
