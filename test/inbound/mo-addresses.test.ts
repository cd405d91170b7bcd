/**
 * An MO's destination keeps its type (docs/design.md "Carrier-grade SMPP": "Addresses keep their
 * type"): sent by an SMSC on a raw socket with each TON, through the SMPP adapter to the real
 * intake on the test database. An international number never matches another account's short
 * code of the same digits; national numbers are read in the carrier's country.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SmppCarrier } from "../../src/delivery/smpp-carrier/adapter.ts";
import { InboundIntake } from "../../src/inbound/intake.ts";
import { destinationCandidates } from "../../src/smpp/numbering.ts";
import { inboundMessagesCollection } from "../../src/store/inbound-messages.ts";
import { assignNumber } from "../../src/store/numbers.ts";
import { IdAllocator } from "../../src/store/sequences.ts";
import { DELIVER_SM, deliverSmBody, pdu, type RawSmsc, startRawSmsc } from "../support/raw-smsc.ts";
import { recordingLogger, smppCarrier } from "../support/smpp.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
const ESME_RX_R_APPN = 0x66;
let smsc: RawSmsc;
let carrier: SmppCarrier;

beforeAll(async () => {
  const db = fixture.store.db;
  // Two accounts whose numbers share digits: a long code and a short code.
  await assignNumber(db, "acct-long", "+50123001");
  await assignNumber(db, "acct-short", "50123001");
  await assignNumber(db, "acct-long", "+4930123456");
  await assignNumber(db, "acct-short", "4455");
  smsc = await startRawSmsc();
  const intake = new InboundIntake({
    db,
    now: () => new Date(),
    ids: new IdAllocator(db.collection("counters"), "inbound", 20),
    logger: recordingLogger(),
    reassemblyMs: 1_800_000,
    defaultAlphabet: "gsm7",
  });
  carrier = smppCarrier(smsc, {
    inbound: (parts) => intake.take(parts),
    national: { country: "DE", callingCode: "49", nationalPrefix: "0" },
  });
  await carrier.start(async () => ({}));
  await smsc.boundAfter(0);
}, 60_000);

afterAll(async () => {
  await carrier?.stop();
  await smsc?.close();
});

/** Sends an MO to `to` with `ton`; answers its deliver_sm_resp status and the account it went to. */
async function mo(to: string, ton: number, text: string) {
  const sequence = smsc.nextSequence();
  const body = deliverSmBody({ to, destTon: ton, message: Buffer.from(text, "latin1") });
  smsc.write(pdu(DELIVER_SM, sequence, body));
  const { status } = await smsc.answerTo(sequence);
  const stored = await inboundMessagesCollection(fixture.store.db).findOne({ text });
  return { status, account: stored?.accountId, to: stored?.to };
}

describe("the MO's destination by its TON", () => {
  it("TON 1 is international: never the short code of the same digits", async () => {
    expect(await mo("50123001", 1, "ton1")).toEqual({
      status: 0,
      account: "acct-long",
      to: "+50123001",
    });
    expect(await mo("+50123001", 1, "ton1 plus")).toMatchObject({ account: "acct-long" });
    expect(await mo("4455", 1, "ton1 short")).toMatchObject({ status: ESME_RX_R_APPN });
  });

  it("TON 3 and 6 are short codes", async () => {
    expect(await mo("50123001", 3, "ton3")).toMatchObject({
      account: "acct-short",
      to: "50123001",
    });
    expect(await mo("4455", 6, "ton6")).toMatchObject({ account: "acct-short", to: "4455" });
  });

  it("TON 0 and 2 try the carrier's country, then short codes; + and 00 make any number E.164", async () => {
    expect(await mo("030123456", 2, "national")).toMatchObject({
      account: "acct-long",
      to: "+4930123456",
    });
    expect(await mo("30123456", 0, "national no prefix")).toMatchObject({
      account: "acct-long",
      to: "+4930123456",
    });
    expect(await mo("50123001", 0, "ton0 short")).toMatchObject({ account: "acct-short" });
    expect(await mo("50123001", 2, "ton2 short")).toMatchObject({ account: "acct-short" });
    expect(await mo("+50123001", 0, "ton0 plus")).toMatchObject({ account: "acct-long" });
    expect(await mo("0050123001", 0, "ton0 00")).toMatchObject({ account: "acct-long" });
  });
});

describe("destination candidates", () => {
  it("keep the TON's reading, and the simulator's MO (no TON) as before", () => {
    expect(destinationCandidates("50123001", 1)).toEqual(["+50123001"]);
    expect(destinationCandidates("50123001", 3)).toEqual(["50123001"]);
    expect(destinationCandidates("50123001", 0)).toEqual(["50123001", "+50123001"]);
    expect(destinationCandidates("4930123456", 0)).toEqual(["+4930123456"]);
    expect(destinationCandidates("50123001", undefined)).toEqual(["50123001", "+50123001"]);
  });
});
