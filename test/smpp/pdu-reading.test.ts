/**
 * The service's own framing and its reading of PDUs (docs/design.md "Carrier-grade SMPP"): any
 * bytes after a valid header are read without an exception, a deliver_sm or data_sm that does not
 * decode is marked malformed with its header kept (so it can be answered), and the stream is cut
 * by command_length alone, however the bytes arrive.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PduFramer, UnframeableStream } from "../../src/smpp/pdu-framer.ts";
import { readPdu } from "../../src/smpp/pdu-reader.ts";
import { deliverSmBody, pdu, tlv } from "../support/raw-smsc.ts";

describe("reading a PDU", () => {
  it("never throws on any bytes after a valid header, and keeps the header", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constantFrom(0x05, 0x103, 0x15, 0x04, 0x80000004, 0x80000009), fc.nat()),
        fc.nat(),
        fc.uint8Array({ maxLength: 400 }),
        (commandId, sequence, body) => {
          const read = readPdu(pdu(commandId, sequence, Buffer.from(body)));
          expect(read.pdu.sequence_number).toBe(sequence);
          expect(read.pdu.command_id).toBe(commandId >>> 0);
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it("reads a well-formed deliver_sm whole, and a C-string TLV without its NUL within its length", () => {
    const body = deliverSmBody({
      message: Buffer.from("id:1 stat:DELIVRD"),
      esmClass: 4,
      tlvs: [tlv(0x001e, Buffer.from("7f3a")), tlv(0x0427, Buffer.from([2]))],
    });
    const { pdu: read, malformed } = readPdu(pdu(0x05, 9, body));
    expect(malformed).toBeUndefined();
    expect(read.receipted_message_id).toBe("7f3a");
    expect(read.message_state).toBe(2);
  });

  it("marks a deliver_sm malformed when a numeric TLV has the wrong size", () => {
    const body = deliverSmBody({ tlvs: [tlv(0x020c, Buffer.from([1]))] });
    const read = readPdu(pdu(0x05, 3, body));
    expect(read.malformed).toMatch(/0x020c has 1 octets, not 2/);
    expect(read.pdu.response({ command_status: 0x65 }).toBuffer().readUInt32BE(4)).toBe(0x80000005);
  });
});

describe("framing", () => {
  it("cuts PDUs by command_length however the stream is chunked", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 50 }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat({ max: 400 }), { maxLength: 10 }),
        (bodies, cuts) => {
          const pdus = bodies.map((body, i) => pdu(0x15, i + 1, Buffer.from(body)));
          const stream = Buffer.concat(pdus);
          const framer = new PduFramer(70_000);
          const out: Buffer[] = [];
          let at = 0;
          for (const cut of [...cuts.map((c) => Math.min(c, stream.length))].sort(
            (a, b) => a - b,
          )) {
            out.push(...framer.push(stream.subarray(at, Math.max(at, cut))));
            at = Math.max(at, cut);
          }
          out.push(...framer.push(stream.subarray(at)));
          expect(out.map((b) => b.toString("hex"))).toEqual(pdus.map((b) => b.toString("hex")));
          expect(framer.partial).toBe(0);
        },
      ),
    );
  });

  it("refuses a command_length under 16 or over the limit", () => {
    const framer = new PduFramer(1_000);
    const short = Buffer.alloc(16);
    short.writeUInt32BE(15, 0);
    expect(() => framer.push(short)).toThrow(UnframeableStream);
    const long = Buffer.alloc(4);
    long.writeUInt32BE(1_001, 0);
    expect(() => new PduFramer(1_000).push(long)).toThrow(UnframeableStream);
    expect(new PduFramer(1_000).push(pdu(0x15, 1, Buffer.alloc(984)))).toHaveLength(1);
  });
});
