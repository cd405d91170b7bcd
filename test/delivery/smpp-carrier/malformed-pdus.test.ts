/**
 * Nothing an SMSC sends stops the bind (docs/design.md "Carrier-grade SMPP"), against an SMSC on a
 * raw socket (test/support/raw-smsc.ts) that writes what real ones write: a deliver_sm or data_sm
 * whose body does not decode is kept for the operator (smpp_malformed_pdus) and answered
 * ESME_RX_P_APPN on the same bind; an unknown command gets generic_nack ESME_RINVCMDID; a 64 KB
 * data_sm is read; only a stream that cannot be framed (a length under 16 or over the limit, a
 * PDU that stops mid-way) closes the bind, which binds again. After each, an MT and an MO go
 * through. The MO reach the real intake on the test database.
 */
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { SmppCarrier } from "../../../src/delivery/smpp-carrier/adapter.ts";
import { InboundIntake } from "../../../src/inbound/intake.ts";
import { inboundMessagesCollection } from "../../../src/store/inbound-messages.ts";
import { keepMalformedPdu, MALFORMED_PDUS } from "../../../src/store/malformed-pdus.ts";
import { assignNumber } from "../../../src/store/numbers.ts";
import { IdAllocator } from "../../../src/store/sequences.ts";
import {
  DATA_SM,
  DELIVER_SM,
  dataSmBody,
  deliverSmBody,
  ENQUIRE_LINK,
  GENERIC_NACK,
  pdu,
  type RawSmsc,
  startRawSmsc,
  tlv,
} from "../../support/raw-smsc.ts";
import { partsOf, recordingLogger, smppCarrier } from "../../support/smpp.ts";
import { useTestStore } from "../../support/store.ts";

const fixture = useTestStore();
const ESME_RX_P_APPN = 0x65;
const ESME_RINVCMDID = 0x03;
let smsc: RawSmsc;
let carrier: SmppCarrier;
const logger = recordingLogger();

beforeAll(async () => {
  await assignNumber(fixture.store.db, "acct-raw", "+4930000001");
  await assignNumber(fixture.store.db, "acct-raw", "+4930000002");
}, 60_000);

async function start(options: Parameters<typeof smppCarrier>[1] = {}): Promise<void> {
  smsc = await startRawSmsc();
  const db = fixture.store.db;
  const intake = new InboundIntake({
    db,
    now: () => new Date(),
    ids: new IdAllocator(db.collection("counters"), "inbound", 20),
    logger,
    reassemblyMs: 1_800_000,
    defaultAlphabet: "gsm7",
  });
  carrier = smppCarrier(smsc, {
    logger,
    inbound: (parts) => intake.take(parts),
    keepMalformed: (malformed) => keepMalformedPdu(db, malformed),
    ...options,
  });
  await carrier.start(async () => ({}));
  await smsc.boundAfter(0);
}

afterEach(async () => {
  await carrier?.stop();
  await smsc?.close();
});

afterAll(async () => {
  await fixture.store.db.collection(MALFORMED_PDUS).deleteMany({});
});

/** The SMSC sends `body` as `commandId` and answers the client's response. */
async function send(commandId: number, body: Buffer) {
  const sequence = smsc.nextSequence();
  smsc.write(pdu(commandId, sequence, body));
  return smsc.answerTo(sequence);
}

const texts = async (to: string) =>
  (await inboundMessagesCollection(fixture.store.db).find({ to }).toArray()).map((m) => m.text);

/** An MT is accepted and an MO stored, on the bind that is up now. */
async function mtAndMoGoThrough(text: string): Promise<void> {
  const [result] = await carrier.submit(partsOf(["after"]));
  expect(result).toMatchObject({ ok: true });
  const answer = await send(DELIVER_SM, deliverSmBody({ message: Buffer.from(text, "latin1") }));
  expect(answer.status).toBe(0);
  expect(await texts("+4930000001")).toContain(text);
}

describe("a PDU whose body does not decode", () => {
  const cases: [string, number, Buffer][] = [
    [
      "a TLV cut short",
      DELIVER_SM,
      // message_payload says 40 octets, 3 follow.
      Buffer.concat([deliverSmBody(), Buffer.from([0x04, 0x24, 0x00, 0x28, 1, 2, 3])]),
    ],
    [
      "a bad schedule_delivery_time",
      DELIVER_SM,
      deliverSmBody({ scheduleDeliveryTime: "tomorrow at 9R", message: Buffer.from("hi") }),
    ],
    [
      "a one-octet sar_msg_ref_num",
      DELIVER_SM,
      deliverSmBody({
        message: Buffer.from("part"),
        tlvs: [
          tlv(0x020c, Buffer.from([7])),
          tlv(0x020e, Buffer.from([2])),
          tlv(0x020f, Buffer.from([1])),
        ],
      }),
    ],
    ["a body that ends before its mandatory fields", DELIVER_SM, Buffer.from([0, 1, 1, 0x34])],
    [
      "a data_sm with two octets after its last TLV",
      DATA_SM,
      Buffer.concat([dataSmBody({ payload: Buffer.from("x") }), Buffer.from([0, 1])]),
    ],
  ];

  it("is kept, answered ESME_RX_P_APPN with its own _resp, and the bind goes on", async () => {
    await start();
    for (const [what, commandId, body] of cases) {
      const answer = await send(commandId, body);
      expect({ what, command: answer.commandId, status: answer.status }).toEqual({
        what,
        command: (commandId | 0x80000000) >>> 0,
        status: ESME_RX_P_APPN,
      });
      await mtAndMoGoThrough(`after ${what}`);
    }
    expect(smsc.connections).toBe(1);
    const kept = await fixture.store.db
      .collection(MALFORMED_PDUS)
      .find({}, { sort: { _id: 1 } })
      .toArray();
    expect(kept.map((doc) => Buffer.from(doc.bytes.buffer).subarray(16))).toEqual(
      cases.map(([, , body]) => body),
    );
    expect(carrier.status().malformedPdus).toBe(cases.length);
  });

  it("an unknown command gets generic_nack ESME_RINVCMDID; unknown TLVs are skipped", async () => {
    await start();
    const nack = await send(0x00000777, Buffer.from("whatever"));
    expect({ command: nack.commandId, status: nack.status }).toEqual({
      command: GENERIC_NACK,
      status: ESME_RINVCMDID,
    });
    const withUnknownTlv = deliverSmBody({
      message: Buffer.from("unknown TLV"),
      tlvs: [tlv(0x1410, Buffer.from("vendor")), tlv(0x1411, Buffer.alloc(0))],
    });
    expect((await send(DELIVER_SM, withUnknownTlv)).status).toBe(0);
    expect(await texts("+4930000001")).toContain("unknown TLV");
    await mtAndMoGoThrough("after an unknown command");
    expect(smsc.connections).toBe(1);
  });
});

describe("framing", () => {
  it("reads a data_sm with 64 KB of message_payload", async () => {
    await start();
    const payload = Buffer.alloc(65_000, "a");
    const answer = await send(DATA_SM, dataSmBody({ to: "4930000002", payload }));
    expect(answer.status).toBe(0);
    const [stored] = await texts("+4930000002");
    expect(stored).toHaveLength(65_000);
    expect(smsc.connections).toBe(1);
  });

  it("closes and binds again only when a length cannot frame the stream", async () => {
    await start({ maxPduBytes: 70_000 });
    for (const length of [15, 70_001]) {
      const before = smsc.connections;
      const header = Buffer.alloc(16);
      header.writeUInt32BE(length, 0);
      header.writeUInt32BE(DELIVER_SM, 4);
      smsc.write(header);
      await smsc.boundAfter(before);
      await mtAndMoGoThrough(`after command_length ${length}`);
    }
  });

  it("closes a bind whose PDU stops mid-way, and the MT waiting on it goes on another", async () => {
    await start({ readTimeoutMs: 500 });
    // Half an enquire_link: the rest never comes, and the answer the MT needs is behind it.
    smsc.write(pdu(ENQUIRE_LINK, smsc.nextSequence()).subarray(0, 9));
    await smsc.boundAfter(1);
    await mtAndMoGoThrough("after a stalled PDU");
    expect(logger.text()).toContain("stopped arriving mid-way");
  });
});

describe("any bytes after a valid header", () => {
  it("are answered on the same bind when the command is a request", async () => {
    await start({ logger: recordingLogger() });
    // Requests that have a response, and one unknown id; never unbind (it ends the bind).
    const commands = [DELIVER_SM, DATA_SM, ENQUIRE_LINK, 0x00000004, 0x00000003, 0x00000999];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...commands),
        fc.uint8Array({ maxLength: 300 }),
        async (commandId, body) => {
          const answer = await send(commandId, Buffer.from(body));
          const expected = commandId === 0x00000999 ? GENERIC_NACK : (commandId | 0x80000000) >>> 0;
          expect(answer.commandId).toBe(expected);
        },
      ),
      { numRuns: 150 },
    );
    expect(smsc.connections).toBe(1);
    await mtAndMoGoThrough("after the property's PDUs");
  });
});
