import { describe, expect, it } from "vitest";
import { moPartOfPdu } from "../../src/delivery/smpp-carrier/mo-pdu.ts";
import {
  groupKey,
  handsetAddress,
  type MoPart,
  numberCandidates,
  partKey,
} from "../../src/inbound/mo-part.ts";
import { assemble } from "../../src/inbound/reassembly.ts";
import { alphabetOf, decodeGsm7, decodeText, encodeGsm7 } from "../../src/smpp/alphabets.ts";
import smpp from "../../src/smpp/codec.ts";
import { splitMessage, udhConcatenation } from "../../src/smpp/concatenation.ts";
import { incomingKind } from "../../src/smpp/recognition.ts";

const hex = (s: string) => Buffer.from(s.replace(/\s/g, ""), "hex");

describe("MO alphabets", () => {
  it("reads GSM 03.38 septets with the extension table", () => {
    expect(decodeGsm7(hex("48 65 6c 6c 6f 20 00 02 11 24 40 5f 60 7f"))).toBe("Hello @$_¤¡§¿à");
    // escape: € [ ] { } | ~ \ ^ and form feed
    expect(decodeGsm7(hex("1b65 1b3c 1b3e 1b28 1b29 1b40 1b3d 1b2f 1b14 1b0a"))).toBe(
      "€[]{}|~\\^\f",
    );
    // an escape before a septet the extension table lacks: that septet's basic character
    expect(decodeGsm7(hex("1b41 42"))).toBe("AB");
    // a lone escape at the end: nothing; a byte that is no septet: U+FFFD
    expect(decodeGsm7(hex("41 1b"))).toBe("A");
    expect(decodeGsm7(hex("41 80 42"))).toBe("A\ufffdB");
    expect(encodeGsm7("Grüß € {x}")).toEqual(hex("47 72 7e 1e 20 1b65 20 1b28 78 1b29"));
    expect(encodeGsm7("emoji 😀")).toBeUndefined();
  });

  it("reads data_coding 0 as the configured default, 1 as IA5, 3 as Latin-1, 8 as UTF-16BE", () => {
    const bytes = hex("40 5f 24");
    expect(decodeText(bytes, 0)).toBe("¡§¤");
    expect(decodeText(bytes, 0, "ia5")).toBe("@_$");
    expect(decodeText(bytes, 0, "latin1")).toBe("@_$");
    expect(decodeText(hex("40 5f e9"), 1)).toBe("@_\ufffd");
    expect(decodeText(hex("47 72 fc df e9"), 3)).toBe("Grüßé");
    // a surrogate pair: one emoji; a lone surrogate or an odd byte: U+FFFD
    expect(decodeText(hex("0048 d83d de00"), 8)).toBe("H😀");
    expect(decodeText(hex("0048 d83d 0041"), 8)).toBe("H\ufffdA");
    expect(decodeText(hex("0048 00"), 8)).toBe("H\ufffd");
  });

  it("takes the alphabet of GSM data coding schemes above 0x0F", () => {
    expect(alphabetOf(0x08, "gsm7")).toBe("ucs2");
    expect(alphabetOf(0x18, "gsm7")).toBe("ucs2"); // general group, compressed bit off, UCS-2
    expect(alphabetOf(0x10, "latin1")).toBe("gsm7"); // class 0, GSM 7-bit
    expect(alphabetOf(0x14, "gsm7")).toBe("latin1"); // 8-bit data
    expect(alphabetOf(0xf0, "latin1")).toBe("gsm7");
    expect(alphabetOf(0xf4, "gsm7")).toBe("latin1");
    expect(alphabetOf(0xe0, "gsm7")).toBe("ucs2");
    expect(alphabetOf(0xc8, "latin1")).toBe("gsm7");
  });
});

describe("MO concatenation", () => {
  it("finds 8-bit and 16-bit UDH references and SAR TLVs", () => {
    expect(splitMessage(hex("050003 2a 03 02 4142"), true)).toEqual({
      payload: hex("4142"),
      concatenation: { ref: 0x2a, refBits: 8, total: 3, seq: 2 },
    });
    expect(splitMessage(hex("060804 1234 02 01 43"), true)).toEqual({
      payload: hex("43"),
      concatenation: { ref: 0x1234, refBits: 16, total: 2, seq: 1 },
    });
    // other elements skipped: a port element before the concatenation
    expect(udhConcatenation(hex("0504 0b84 23f0 0003 07 02 02"))).toEqual({
      ref: 7,
      refBits: 8,
      total: 2,
      seq: 2,
    });
    expect(splitMessage(hex("4142"), false, { ref: 0xbeef, total: 4, seq: 4 })).toEqual({
      payload: hex("4142"),
      concatenation: { ref: 0xbeef, refBits: 16, total: 4, seq: 4 },
    });
  });

  it("takes a part without a sensible place as a message of its own", () => {
    expect(splitMessage(hex("050003 2a 01 01 41"), true)).toEqual({ payload: hex("41") });
    expect(splitMessage(hex("050003 2a 02 03 41"), true)).toEqual({ payload: hex("41") });
    expect(splitMessage(hex("4142"), false, { ref: 1, total: 2, seq: 0 })).toEqual({
      payload: hex("4142"),
    });
    // a header longer than the message: the bytes as they are
    expect(splitMessage(hex("09 0003"), true)).toEqual({ payload: hex("090003") });
  });

  it("assembles in place order, keeping the first of a repeated place", () => {
    const parts = [
      { seq: 3, payload: hex("03") },
      { seq: 1, payload: hex("01") },
      { seq: 3, payload: hex("ff") },
      { seq: 9, payload: hex("09") },
    ];
    expect(assemble(parts, 3)).toMatchObject({
      payload: hex("0103"),
      received: 2,
      complete: false,
    });
    expect(assemble([...parts, { seq: 2, payload: hex("02") }], 3)).toMatchObject({
      payload: hex("010203"),
      complete: true,
    });
  });
});

describe("MO recognition and addresses", () => {
  it("tells MO from receipts by esm_class first, TLVs second", () => {
    expect(incomingKind(0x00)).toBe("mo");
    expect(incomingKind(0x40)).toBe("mo"); // UDHI only
    expect(incomingKind(0x80)).toBe("mo"); // reply path
    expect(incomingKind(0x04)).toBe("receipt");
    expect(incomingKind(0x08)).toBe("receipt");
    expect(incomingKind(0x20)).toBe("receipt");
    expect(incomingKind(0x10)).toBe("other");
    expect(incomingKind(0x00, { receiptedMessageId: "ab", messageState: 2 })).toBe("receipt");
    expect(incomingKind(0x00, { receiptedMessageId: "ab" })).toBe("mo");
  });

  it("writes the handset as E.164 when it is international, and finds a number in any form", () => {
    expect(handsetAddress("4915112345678", 1)).toBe("+4915112345678");
    expect(handsetAddress("4915112345678", 0)).toBe("+4915112345678");
    expect(handsetAddress("004915112345678", 0)).toBe("+4915112345678");
    expect(handsetAddress("+4915112345678", 0)).toBe("+4915112345678");
    expect(handsetAddress("015112345678", 2)).toBe("015112345678");
    expect(handsetAddress("12345", 0)).toBe("12345");
    expect(handsetAddress("Acme", 5)).toBe("Acme");
    expect(numberCandidates({ to: "4930123456" })).toEqual(["4930123456", "+4930123456"]);
    expect(numberCandidates({ to: "+4930123456" })).toEqual(["+4930123456", "4930123456"]);
    expect(numberCandidates({ to: "004930123456" })).toEqual(["+4930123456", "004930123456"]);
    expect(numberCandidates({ to: "12345" })).toEqual(["12345", "+12345"]);
  });

  it("keys a part by what was sent, a message by its carrier, addresses, reference and total", () => {
    const part: MoPart = {
      carrier: "smpp:a",
      from: "+4915112345678",
      to: "12345",
      dataCoding: 0,
      payload: hex("4142"),
      concatenation: { ref: 7, refBits: 8, total: 2, seq: 1 },
    };
    const second = {
      ...part,
      payload: hex("43"),
      concatenation: { ref: 7, refBits: 8 as const, total: 2, seq: 2 },
    };
    expect(partKey({ ...part, payload: hex("4142") })).toBe(partKey(part));
    expect(partKey(second)).not.toBe(partKey(part));
    expect(partKey({ ...part, carrier: "smpp:b" })).not.toBe(partKey(part));
    expect(groupKey(second)).toBe(groupKey(part));
    expect(
      groupKey({ ...part, concatenation: { ref: 7, refBits: 16, total: 2, seq: 1 } }),
    ).not.toBe(groupKey(part));
    expect(groupKey({ ...part, from: "+4915112345679" })).not.toBe(groupKey(part));
  });
});

describe("MO from an SMPP PDU", () => {
  // Encoded, then decoded from the bytes as the adapter's connection does.
  const received = (command: string, fields: Record<string, unknown>) =>
    new smpp.PDU(new smpp.PDU(command, { sequence_number: 1, ...fields }).toBuffer());

  it("takes the raw bytes of short_message, its UDH, and of message_payload with SAR TLVs", () => {
    const udh = received("deliver_sm", {
      source_addr_ton: 1,
      source_addr: "4915112345678",
      destination_addr: "12345",
      esm_class: 0x40,
      data_coding: 8,
      short_message: hex("050003 2a 02 01 d83d"),
    });
    expect(moPartOfPdu(udh, "smpp:x")).toEqual({
      carrier: "smpp:x",
      from: "+4915112345678",
      to: "12345",
      toTon: 0,
      dataCoding: 8,
      payload: hex("d83d"),
      concatenation: { ref: 0x2a, refBits: 8, total: 2, seq: 1 },
    });
    const data = received("data_sm", {
      source_addr: "4915112345678",
      destination_addr: "4930123456",
      data_coding: 0,
      message_payload: hex("1b65 40"),
      sar_msg_ref_num: 0x1234,
      sar_total_segments: 3,
      sar_segment_seqnum: 3,
    });
    expect(moPartOfPdu(data, "smpp:x")).toMatchObject({
      dataCoding: 0,
      payload: hex("1b65 40"),
      concatenation: { ref: 0x1234, refBits: 16, total: 3, seq: 3 },
    });
  });
});
