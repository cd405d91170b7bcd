/**
 * Every submit_sm field the design fixes, as the test SMSC read them off the wire: data_coding and
 * bytes of Latin-1 and UCS-2 parts, concatenation of 2- and 10-part texts (SAR TLVs, and a UDH),
 * an emoji across a part boundary, TON/NPI of alphanumeric and numeric senders, validity from the
 * ttl left, registered_delivery; and the message_id of each submit_sm_resp as the part's result.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { SmppCarrier } from "../../../src/delivery/smpp-carrier/adapter.ts";
import { splitText } from "../../../src/domain/segments.ts";
import { partsOf, smppCarrier } from "../../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../../support/smsc.ts";
import { type Pdu, shortMessage, tlv } from "../../support/smsc-pdus.ts";

const SAR_MSG_REF_NUM = 0x020c;
const SAR_TOTAL_SEGMENTS = 0x020e;
const SAR_SEGMENT_SEQNUM = 0x020f;

let smsc: TestSmsc;
let carrier: SmppCarrier;
let udhCarrier: SmppCarrier;

beforeAll(async () => {
  smsc = await startSmsc({ config: { receiptDelayMs: 10 } });
  carrier = smppCarrier(smsc);
  udhCarrier = smppCarrier(smsc, { concatenation: "udh" });
  for (const c of [carrier, udhCarrier]) await c.start(async () => ({}));
});

afterAll(async () => {
  await carrier?.stop();
  await udhCarrier?.stop();
  await smsc?.stop();
});

beforeEach(async () => {
  await smsc.reset();
});

async function submitted(): Promise<Pdu[]> {
  return smsc.pdus({ command: "submit_sm" });
}

function utf16be(text: string): string {
  return Buffer.from(text, "utf16le").swap16().toString("hex");
}

describe("submit_sm fields", () => {
  it("sends a Latin-1 text as data_coding 3 with its ISO-8859-1 bytes", async () => {
    const text = "Grüße aus Köln: ½ Preis, 100 ¥ ÿ";
    const results = await carrier.submit(partsOf([text]));
    const [pdu] = await submitted();
    expect(pdu?.data_coding).toBe(3);
    expect(pdu?.short_message_hex).toBe(Buffer.from(text, "latin1").toString("hex"));
    expect(pdu?.sm_length).toBe(text.length);
    expect(pdu?.esm_class).toBe(0);
    expect(pdu?.registered_delivery).toBe(1);
    expect(pdu?.optional_parameters ?? []).toEqual([]);
    // the part's result is the submit_sm_resp's message_id, exactly
    const [resp] = await smsc.pdus({ command: "submit_sm_resp" });
    expect(results).toEqual([{ ok: true, carrierId: resp?.message_id }]);
  });

  it("sends any other text as data_coding 8 with UTF-16BE bytes", async () => {
    const text = "Привет, €5 👋";
    await carrier.submit(partsOf([text]));
    const [pdu] = await submitted();
    expect(pdu?.data_coding).toBe(8);
    expect(pdu?.short_message_hex).toBe(utf16be(text));
  });

  it("concatenates a 2-part and a 10-part text with SAR TLVs, one reference per message", async () => {
    const two = splitText("Lorem ipsum dolor sit amet. ".repeat(8)).parts;
    const ten = splitText("x".repeat(1530)).parts;
    expect(two).toHaveLength(2);
    expect(ten).toHaveLength(10);
    const twoParts = partsOf(two);
    const tenParts = partsOf(ten);
    await Promise.all([carrier.submit(twoParts), carrier.submit(tenParts)]);
    const log = await submitted();
    expect(log).toHaveLength(12);
    const refs = new Set<string>();
    for (const [parts, texts] of [
      [twoParts, two],
      [tenParts, ten],
    ] as const) {
      const destination = parts[0]!.to.slice(1);
      const mine = log
        .filter((p) => p.destination_addr === destination)
        .filter((p) => tlv(p, SAR_TOTAL_SEGMENTS)?.readUInt8(0) === texts.length)
        .sort(
          (a, b) =>
            tlv(a, SAR_SEGMENT_SEQNUM)!.readUInt8(0) - tlv(b, SAR_SEGMENT_SEQNUM)!.readUInt8(0),
        );
      expect(mine).toHaveLength(texts.length);
      expect(mine.map((p) => tlv(p, SAR_SEGMENT_SEQNUM)?.readUInt8(0))).toEqual(
        texts.map((_, i) => i + 1),
      );
      const ref = new Set(mine.map((p) => tlv(p, SAR_MSG_REF_NUM)?.toString("hex")));
      expect(ref.size).toBe(1);
      expect(tlv(mine[0]!, SAR_MSG_REF_NUM)).toHaveLength(2);
      refs.add([...ref][0]!);
      // each part exactly as the segmenting rule made it, no UDH
      expect(mine.map((p) => shortMessage(p).toString("latin1"))).toEqual(texts);
      expect(mine.every((p) => p.esm_class === 0 && p.data_coding === 3)).toBe(true);
    }
    expect(refs.size).toBe(2);
  });

  it("or with a UDH and esm_class 0x40", async () => {
    const texts = splitText("Ünïcödé-free but Latin-1 ".repeat(10)).parts;
    const parts = partsOf(texts);
    await udhCarrier.submit(parts);
    const log = (await submitted()).sort(
      (a, b) => shortMessage(a).readUInt8(5) - shortMessage(b).readUInt8(5),
    );
    expect(log).toHaveLength(texts.length);
    log.forEach((pdu, i) => {
      expect(pdu.esm_class).toBe(0x40);
      const bytes = shortMessage(pdu);
      expect(bytes.subarray(0, 6)).toEqual(
        Buffer.from([5, 0, 3, parts[0]!.messageId & 0xff, texts.length, i + 1]),
      );
      expect(bytes.subarray(6).toString("latin1")).toBe(texts[i]);
    });
  });

  it("keeps an emoji on the boundary whole, in the next part", async () => {
    const text = `${"a".repeat(66)}😀${"ü".repeat(20)}`;
    const texts = splitText(text).parts;
    expect(texts).toHaveLength(2);
    await carrier.submit(partsOf(texts));
    const log = (await submitted()).sort(
      (a, b) => tlv(a, SAR_SEGMENT_SEQNUM)!.readUInt8(0) - tlv(b, SAR_SEGMENT_SEQNUM)!.readUInt8(0),
    );
    // the first part is all Latin-1 by the segmenting rule; the second begins with the whole pair
    expect(log[0]?.data_coding).toBe(3);
    expect(shortMessage(log[0]!).toString("latin1")).toBe("a".repeat(66));
    expect(log[1]?.data_coding).toBe(8);
    expect(log[1]?.short_message_hex?.slice(0, 8)).toBe("d83dde00");
    expect(log[1]?.short_message_hex).toBe(utf16be(`😀${"ü".repeat(20)}`));
  });

  it("addresses: TON 5/NPI 0 for an alphanumeric sender, TON 1/NPI 1 without + for numbers", async () => {
    await carrier.submit([
      ...partsOf(["alpha"], { from: "SMSINFO", to: "+4915100000001" }),
      ...partsOf(["numeric"], { from: "+4930123456", to: "4915100000002" }),
    ]);
    const log = await submitted();
    const alpha = log.find((p) => p.destination_addr === "4915100000001");
    const numeric = log.find((p) => p.destination_addr === "4915100000002");
    expect(alpha).toMatchObject({
      source_addr_ton: 5,
      source_addr_npi: 0,
      source_addr: "SMSINFO",
      dest_addr_ton: 1,
      dest_addr_npi: 1,
    });
    expect(numeric).toMatchObject({
      source_addr_ton: 1,
      source_addr_npi: 1,
      source_addr: "4930123456",
      dest_addr_ton: 1,
      dest_addr_npi: 1,
    });
  });

  it("sets validity_period relative from the ttl left at submission", async () => {
    await carrier.submit(
      partsOf(["two hours left"], { expiresAt: new Date(Date.now() + 7_200_000) }),
    );
    const [pdu] = await submitted();
    // floor of the seconds left: 7200 when submitted within the same millisecond, else 7199
    expect(["000000020000000R", "000000015959000R"]).toContain(pdu?.validity_period);
  });
});
