/**
 * Reassembly as a property (issue 26, "Tests"): any text, cut into parts at any bytes (a UCS-2
 * surrogate pair and a GSM escape may be cut in two), sent as deliver_sm or data_sm with a UDH of
 * 8 or 16 bits or SAR TLVs, received in any order with any part repeated, gives back the text.
 * The parts go through the SMPP codec and the MO mapping the adapter uses, then the pure assembly
 * and decoding the intake uses.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { moPartOfPdu } from "../../src/delivery/smpp-carrier/mo-pdu.ts";
import { groupKey } from "../../src/inbound/mo-part.ts";
import { assemble } from "../../src/inbound/reassembly.ts";
import { decodeText, encodeGsm7 } from "../../src/smpp/alphabets.ts";
import smpp from "../../src/smpp/codec.ts";

type Coding = 0 | 3 | 8;
type Concat = "udh8" | "udh16" | "sar";

const EMOJI = ["😀", "👍🏽", "🇩🇪", "\u{10FFFF}", "𝄞"];
const GSM_EXTENSION = ["€", "[", "]", "{", "}", "|", "~", "\\", "^"];

/** No lone surrogate (String.prototype.isWellFormed is newer than the library settings). */
const wellFormed = (text: string) =>
  !/[\ud800-\udfff]/.test(text.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ""));

const texts: Record<Coding, fc.Arbitrary<string>> = {
  // Any well-formed text, rich in surrogate pairs.
  8: fc
    .string({
      unit: fc.oneof(
        fc.constantFrom(...EMOJI),
        fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
      ),
      minLength: 1,
      maxLength: 80,
    })
    .filter(wellFormed),
  // GSM 03.38, rich in escapes.
  0: fc.string({
    unit: fc.oneof(
      fc.constantFrom(...GSM_EXTENSION, "@", "ß", "Δ", "à"),
      fc.constantFrom(..."abcXYZ 019.,?!"),
    ),
    minLength: 1,
    maxLength: 200,
  }),
  3: fc.string({
    unit: fc.integer({ min: 0, max: 0xff }).map((c) => String.fromCharCode(c)),
    minLength: 1,
    maxLength: 200,
  }),
};

function encode(text: string, coding: Coding): Buffer {
  if (coding === 0) return encodeGsm7(text) as Buffer;
  if (coding === 3) return Buffer.from(text, "latin1");
  const bytes = Buffer.alloc(text.length * 2);
  for (let i = 0; i < text.length; i++) bytes.writeUInt16BE(text.charCodeAt(i), i * 2);
  return bytes;
}

/** Cuts `bytes` at the given offsets (any byte, so a code unit too): 2 to 255 parts, none empty. */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.map((o) => 1 + (o % Math.max(1, bytes.length - 1))))]
    .filter((p) => p < bytes.length)
    .sort((a, b) => a - b)
    .slice(0, 254);
  const edges = [0, ...points, bytes.length];
  return edges.slice(1).map((end, i) => bytes.subarray(edges[i], end));
}

function pdu(
  command: "deliver_sm" | "data_sm",
  concat: Concat,
  coding: Coding,
  ref: number,
  parts: Buffer[],
  index: number,
) {
  const total = parts.length;
  const seq = index + 1;
  const payload = parts[index] as Buffer;
  const fields: Record<string, unknown> = {
    sequence_number: 1,
    source_addr_ton: 1,
    source_addr: "4915112345678",
    destination_addr: "4930123456",
    data_coding: coding,
    esm_class: 0,
  };
  let body = payload;
  if (concat === "udh8")
    body = Buffer.concat([Buffer.from([5, 0, 3, ref & 0xff, total, seq]), payload]);
  if (concat === "udh16")
    body = Buffer.concat([
      Buffer.from([6, 8, 4, (ref >> 8) & 0xff, ref & 0xff, total, seq]),
      payload,
    ]);
  if (concat === "sar")
    Object.assign(fields, {
      sar_msg_ref_num: ref,
      sar_total_segments: total,
      sar_segment_seqnum: seq,
    });
  else fields.esm_class = 0x40;
  // data_sm has no short_message: the whole body goes in message_payload.
  if (command === "data_sm") fields.message_payload = body;
  else fields.short_message = body;
  return new smpp.PDU(new smpp.PDU(command, fields).toBuffer());
}

const scenario = fc
  .record({
    coding: fc.constantFrom<Coding>(0, 3, 8),
    concat: fc.constantFrom<Concat>("udh8", "udh16", "sar"),
    command: fc.constantFrom<"deliver_sm" | "data_sm">("deliver_sm", "data_sm"),
    ref: fc.integer({ min: 0, max: 0xffff }),
    offsets: fc.array(fc.nat(), { minLength: 1, maxLength: 12 }),
  })
  .chain((base) =>
    texts[base.coding].chain((text) => {
      const parts = cut(encode(text, base.coding), base.offsets);
      const indexes = parts.map((_, i) => i);
      return fc
        .record({
          order: fc.shuffledSubarray(indexes, { minLength: parts.length, maxLength: parts.length }),
          repeats: fc.array(fc.record({ part: fc.nat(parts.length - 1), at: fc.nat() }), {
            maxLength: 5,
          }),
        })
        .map(({ order, repeats }) => {
          const arrivals = [...order];
          for (const r of repeats) arrivals.splice(r.at % (arrivals.length + 1), 0, r.part);
          return { ...base, text, parts, arrivals };
        });
    }),
  );

describe("MO reassembly (property)", () => {
  it("gives back the text for any split, order and repetition of parts", () => {
    fc.assert(
      fc.property(scenario, ({ coding, concat, command, ref, text, parts, arrivals }) => {
        const received = arrivals.map((i) =>
          moPartOfPdu(pdu(command, concat, coding, ref, parts, i), "smpp:test"),
        );
        // One message: every part has its group's key.
        expect(new Set(received.map(groupKey)).size).toBe(1);
        const seen = new Set<number>();
        for (let n = 0; n < received.length; n++) {
          seen.add(arrivals[n] as number);
          const sofar = received
            .slice(0, n + 1)
            .map((p) => ({ seq: p.concatenation?.seq ?? 1, payload: p.payload }));
          const assembly = assemble(sofar, received[0]?.concatenation?.total ?? 1);
          // Complete exactly once every place came, however many repeats.
          expect(assembly.complete).toBe(seen.size === parts.length);
          if (assembly.complete) expect(decodeText(assembly.payload, coding, "gsm7")).toBe(text);
        }
      }),
      { numRuns: 400 },
    );
  });

  it("keeps an emoji whose surrogate pair is cut between two parts", () => {
    const bytes = encode("ab😀", 8);
    // 00 61 00 62 | d8 3d | de 00: the pair in two parts, received backwards.
    const parts = [bytes.subarray(0, 4), bytes.subarray(4, 6), bytes.subarray(6)];
    const received = [2, 1, 0, 1].map((i) =>
      moPartOfPdu(pdu("deliver_sm", "udh16", 8, 0xabcd, parts, i), "smpp:test"),
    );
    const assembly = assemble(
      received.map((p) => ({ seq: p.concatenation?.seq ?? 1, payload: p.payload })),
      3,
    );
    expect(assembly.complete).toBe(true);
    expect(decodeText(assembly.payload, 8)).toBe("ab😀");
  });
});
