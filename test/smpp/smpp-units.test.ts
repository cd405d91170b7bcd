/**
 * The SMPP adapter's pure parts: a part's submit_sm fields (data_coding and bytes, addresses,
 * validity, concatenation), receipt parsing and the stat/err mapping, the SMPP URL, its
 * configuration, and the receipt inbox's holding rules (with a fake handler).
 */

import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.ts";
import type { CarrierPart, CarrierReceipt } from "../../src/delivery/carrier.ts";
import { ReceiptInbox } from "../../src/delivery/smpp-carrier/receipt-inbox.ts";
import { splitText } from "../../src/domain/segments.ts";
import smpp from "../../src/smpp/codec.ts";
import {
  concatenationReference,
  destinationAddress,
  encodeText,
  relativeValidity,
  sourceAddress,
  submitSmFields,
} from "../../src/smpp/encoding.ts";
import { describeEndpoint, parseSmppUrl } from "../../src/smpp/endpoint.ts";
import {
  deliverSmText,
  parseReceipt,
  reasonOfError,
  receiptOutcome,
} from "../../src/smpp/receipts.ts";

const silent = { info() {}, warn() {}, error() {}, debug() {} };

function part(text: string, extra: Partial<CarrierPart> = {}): CarrierPart {
  return {
    messageId: 4242,
    partId: 4242,
    partIndex: 0,
    partCount: 1,
    to: "+4915112345678",
    from: "Acme",
    text,
    expiresAt: new Date(1_000_000 + 3_600_000),
    ...extra,
  };
}

describe("submit_sm fields", () => {
  it("sends a Latin-1 part as data_coding 3 with ISO-8859-1 bytes", () => {
    const { dataCoding, bytes } = encodeText("Grüße, café ÿ");
    expect(dataCoding).toBe(3);
    expect(bytes).toEqual(Buffer.from([..."Grüße, café ÿ"].map((c) => c.charCodeAt(0))));
  });

  it("sends any other part as data_coding 8 with UTF-16BE bytes, surrogate pairs intact", () => {
    const { dataCoding, bytes } = encodeText("€😀a");
    expect(dataCoding).toBe(8);
    expect(bytes.toString("hex")).toBe("20acd83dde000061");
  });

  it("decides per part, by the segmenting rule", () => {
    // 66 Latin-1 characters, then an emoji the 67-unit boundary would cut: it moves on.
    const text = `${"a".repeat(66)}😀${"b".repeat(10)}`;
    const { parts } = splitText(text);
    expect(parts).toHaveLength(2);
    expect(encodeText(parts[0]!).dataCoding).toBe(3);
    expect(encodeText(parts[1]!).bytes.subarray(0, 4).toString("hex")).toBe("d83dde00");
  });

  it("addresses: destination and numeric sender TON 1/NPI 1 without +, alphanumeric TON 5/NPI 0", () => {
    expect(destinationAddress("+4915112345678")).toEqual({ ton: 1, npi: 1, addr: "4915112345678" });
    expect(destinationAddress("4915112345678")).toEqual({ ton: 1, npi: 1, addr: "4915112345678" });
    expect(sourceAddress("+4930123456")).toEqual({ ton: 1, npi: 1, addr: "4930123456" });
    expect(sourceAddress("4930123456")).toEqual({ ton: 1, npi: 1, addr: "4930123456" });
    expect(sourceAddress("SMSINFO")).toEqual({ ton: 5, npi: 0, addr: "SMSINFO" });
    expect(sourceAddress("Shop24")).toEqual({ ton: 5, npi: 0, addr: "Shop24" });
  });

  it("writes the validity relative, from the ttl left, at least a second", () => {
    expect(relativeValidity(21_600)).toBe("000000060000000R");
    expect(relativeValidity(3_599.9)).toBe("000000005959000R");
    expect(relativeValidity(90_061)).toBe("000001010101000R");
    expect(relativeValidity(0.2)).toBe("000000000001000R");
    expect(relativeValidity(-5)).toBe("000000000001000R");
    const fields = submitSmFields(part("hi"), { now: 1_000_000 + 1_000, concatenation: "sar" });
    expect(fields.validity_period).toBe("000000005959000R");
    expect(fields.registered_delivery).toBe(1);
  });

  it("concatenates with SAR TLVs or a UDH, one reference per message", () => {
    const second = part("b", { partIndex: 1, partCount: 3 });
    const sar = submitSmFields(second, { now: 1_000_000, concatenation: "sar" });
    expect(sar).toMatchObject({
      esm_class: 0,
      sar_msg_ref_num: 4242,
      sar_total_segments: 3,
      sar_segment_seqnum: 2,
    });
    const udh = submitSmFields(second, { now: 1_000_000, concatenation: "udh" });
    expect(udh.esm_class).toBe(0x40);
    expect((udh.short_message as Buffer).toString("hex")).toBe(
      `050003${(4242 & 0xff).toString(16)}030262`,
    );
    expect(udh.sar_msg_ref_num).toBeUndefined();
    expect(concatenationReference(0x12345, "sar")).toBe(0x2345);
    // a single part carries none
    const single = submitSmFields(part("x"), { now: 1_000_000, concatenation: "sar" });
    expect(single.sar_msg_ref_num).toBeUndefined();
    expect(single.esm_class).toBe(0);
  });

  it("is encoded by the smpp package exactly as given", () => {
    const fields = submitSmFields(part("Grüße"), { now: 1_000_000, concatenation: "sar" });
    const pdu = new smpp.PDU("submit_sm", { ...fields, sequence_number: 7 });
    const back = new smpp.PDU(pdu.toBuffer());
    expect(back.data_coding).toBe(3);
    expect(back.source_addr).toBe("Acme");
    expect(back.source_addr_ton).toBe(5);
    expect(back.destination_addr).toBe("4915112345678");
    expect((back.short_message as { message: string }).message).toBe("Grüße");
  });
});

describe("receipts", () => {
  // Encoded and decoded again, as a deliver_sm from the wire.
  const deliverSm = (fields: Record<string, unknown>) =>
    new smpp.PDU(
      new smpp.PDU("deliver_sm", { esm_class: 4, data_coding: 0, ...fields }).toBuffer(),
    );
  const text = (id: string, stat: string, err = "000") =>
    `id:${id} sub:001 dlvrd:001 submit date:2501011200 done date:2501011201 stat:${stat} err:${err} text:hello`;

  it("takes the id from receipted_message_id, else from the text, exactly as written", () => {
    const withTlv = deliverSm({
      short_message: Buffer.from(text("ignored", "DELIVRD")),
      receipted_message_id: "Ab_12$x@",
    });
    expect(parseReceipt(withTlv)).toEqual({
      carrierId: "Ab_12$x@",
      stat: "DELIVRD",
      err: "000",
      doneTime: "2501011201",
    });
    const fromText = deliverSm({
      short_message: Buffer.from(text("0a1B_c$d@e", "UNDELIV", "027")),
    });
    expect(parseReceipt(fromText)).toEqual({
      carrierId: "0a1B_c$d@e",
      stat: "UNDELIV",
      err: "027",
      doneTime: "2501011201",
    });
  });

  it("reads data_coding 0 and 1 receipts byte per character (never through the GSM table), 8 as UTF-16BE", () => {
    const bytes = Buffer.from(
      Array.from({ length: 0x60 }, (_, i) => i + 0x20).filter((b) => b !== 0x7f),
    );
    const pdu = deliverSm({ short_message: bytes, data_coding: 0 });
    expect(deliverSmText(pdu)).toBe(bytes.toString("latin1"));
    const ia5 = deliverSm({ short_message: bytes, data_coding: 1 });
    expect(deliverSmText(ia5)).toBe(bytes.toString("latin1"));
    const ucs2 = deliverSm({
      short_message: Buffer.from("00690064003a00410042", "hex"),
      data_coding: 8,
    });
    expect(parseReceipt(ucs2)?.carrierId).toBe("AB");
  });

  it("reads stat from message_state when the text has none", () => {
    const pdu = deliverSm({ receipted_message_id: "abc", message_state: 3 });
    expect(parseReceipt(pdu)).toEqual({ carrierId: "abc", stat: "EXPIRED", err: "", doneTime: "" });
  });

  it("maps stat and err to the design's statuses and reasons", () => {
    expect(receiptOutcome("DELIVRD", "000")).toEqual({ status: "DELIVERED" });
    expect(receiptOutcome("EXPIRED", "000")).toEqual({
      status: "DELIVERY_ERROR",
      reason: "Expired",
    });
    for (const stat of ["UNDELIV", "REJECTD", "UNKNOWN", "DELETED"]) {
      expect(receiptOutcome(stat, "001")).toEqual({
        status: "DELIVERY_ERROR",
        reason: "Unroutable",
      });
    }
    expect(reasonOfError("001")).toBe("Unroutable");
    expect(reasonOfError("005")).toBe("Unroutable");
    expect(reasonOfError("027")).toBe("Unreachable");
    expect(reasonOfError("031")).toBe("Unreachable");
    expect(reasonOfError("032")).toBe("SIM card full");
    expect(reasonOfError("000")).toBe("Undelivered");
    expect(reasonOfError("")).toBe("Undelivered");
    expect(reasonOfError("0x1B")).toBe("Undelivered");
    expect(receiptOutcome("ENROUTE", "000")).toBeUndefined();
    expect(receiptOutcome("ACCEPTD", "000")).toBeUndefined();
  });
});

describe("SMS_SMPP_URL and the SMPP configuration", () => {
  it("parses smpp:// and smpps:// URLs, percent-decoding the credentials", () => {
    expect(parseSmppUrl("smpp://test:secret@127.0.0.1:2775")).toEqual({
      host: "127.0.0.1",
      port: 2775,
      tls: false,
      systemId: "test",
      password: "secret",
    });
    const tls = parseSmppUrl("smpps://acme%40x:p%3Ass@smsc.example.net");
    expect(tls).toMatchObject({ tls: true, port: 3550, systemId: "acme@x", password: "p:ss" });
    expect(describeEndpoint(tls)).toBe("smpps://acme%40x@smsc.example.net:3550");
    expect(parseSmppUrl("smpp://t:s@[::1]:9000")).toMatchObject({ host: "::1", port: 9000 });
  });

  it("reports bad values by name, never with the password", () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return "";
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).problems.join("\n");
      }
    };
    expect(problems({ SMS_CARRIER: "smpp" })).toContain("SMS_SMPP_URL: required");
    const bad = problems({
      SMS_CARRIER: "smpp",
      SMS_SMPP_URL: "http://test:hunter2@host:1",
      SMS_SMPP_BINDS: "0",
      SMS_SMPP_WINDOW: "lots",
    });
    expect(bad).toContain("SMS_SMPP_URL: expected smpp://");
    expect(bad).toContain("SMS_SMPP_BINDS");
    expect(bad).toContain("SMS_SMPP_WINDOW");
    expect(bad).not.toContain("hunter2");
    expect(problems({ SMS_CARRIER: "smpp", SMS_SMPP_URL: "smpp://:hunter2@host:1" })).not.toContain(
      "hunter2",
    );
    expect(problems({ SMS_CARRIER: "carrier-pigeon" })).toContain("SMS_CARRIER");
  });

  it("defaults as the design says; TPS 0 means no limit", () => {
    const config = loadConfig({ SMS_CARRIER: "smpp", SMS_SMPP_URL: "smpp://a:b@h:1" });
    expect(config.carrier).toBe("smpp");
    expect(config.smpp).toMatchObject({
      systemType: "",
      binds: 1,
      window: 10,
      tps: 50,
      enquireLinkS: 30,
      concatenation: "sar",
    });
    expect(
      loadConfig({ SMS_CARRIER: "smpp", SMS_SMPP_URL: "smpp://a:b@h:1", SMS_SMPP_TPS: "0" }).smpp
        ?.tps,
    ).toBeUndefined();
    expect(loadConfig({}).carrier).toBe("simulator");
  });
});

describe("receipt inbox", () => {
  const receipt = (carrierId: string): CarrierReceipt => ({
    carrierId,
    status: "DELIVERED",
    at: new Date(),
  });
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(check()).toBe(true);
  };

  it("answers a receipt only once stored; holds the unmatched, then answers and drops them", async () => {
    const inbox = new ReceiptInbox({ logger: silent, holdUnknownMs: 400, batchSize: 10 });
    const offered: string[][] = [];
    let storable = new Set<string>();
    inbox.start(async (receipts) => {
      offered.push(receipts.map((r) => r.carrierId));
      return { retry: receipts.map((r) => r.carrierId).filter((id) => !storable.has(id)) };
    });
    const acks: string[] = [];
    inbox.add(receipt("late"), () => acks.push("late") > 0);
    inbox.add(receipt("never"), () => acks.push("never") > 0);
    await until(() => offered.length >= 2);
    expect(acks).toEqual([]);
    // the SMSC sends "late" again while it is held: both deliver_sm are answered once stored
    inbox.add(receipt("late"), () => acks.push("late again") > 0);
    storable = new Set(["late"]);
    await until(() => acks.includes("late"));
    expect(acks.filter((a) => a.startsWith("late"))).toEqual(["late", "late again"]);
    expect(acks).not.toContain("never");
    await until(() => acks.includes("never"));
    expect(inbox.stats()).toMatchObject({ held: 0, stored: 1, dropped: 1 });
    await inbox.stop();
  });

  it("never answers while storing fails", async () => {
    const inbox = new ReceiptInbox({ logger: silent, holdUnknownMs: 50, batchSize: 10 });
    let calls = 0;
    inbox.start(async () => {
      calls++;
      throw new Error("database down");
    });
    let answered = false;
    inbox.add(receipt("x"), () => {
      answered = true;
      return true;
    });
    await until(() => calls >= 2);
    expect(answered).toBe(false);
    expect(inbox.size).toBe(1);
    await inbox.stop();
  });
});
