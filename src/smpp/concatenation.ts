/**
 * Which part of which long message an MO is (docs/design.md "Two-way messaging": "Multi-part MO"). Pure.
 *
 * - UDH (the `esm_class` UDHI bit 0x40): the header's length octet, then information elements;
 *   IEI 0x00 is concatenation with an 8-bit reference (`00 03 ref total seq`), IEI 0x08 with a
 *   16-bit one (`08 04 refHi refLo total seq`). Other elements (ports, national language shifts)
 *   are skipped. The payload is what follows the header.
 * - SAR TLVs: `sar_msg_ref_num` (0x020C, 16 bits), `sar_total_segments` (0x020E),
 *   `sar_segment_seqnum` (0x020F); a UDH's concatenation wins when both are present.
 * - A part that names no sensible place (total 0 or 1, sequence 0 or above the total, a header
 *   longer than the message) is taken as a message of its own, with whatever payload it has, so
 *   that nothing sent is dropped.
 */

export interface Concatenation {
  /** The reference shared by the parts of one message. */
  ref: number;
  /** 8 for a UDH IEI 0x00; 16 for IEI 0x08 and for SAR TLVs. */
  refBits: 8 | 16;
  total: number;
  /** 1-based. */
  seq: number;
}

export interface SarFields {
  ref?: number | undefined;
  total?: number | undefined;
  seq?: number | undefined;
}

export interface Split {
  payload: Buffer;
  concatenation?: Concatenation;
}

export const ESM_CLASS_UDHI = 0x40;

/** The payload and place of a part: its UDH when `udhi`, else its SAR TLVs. */
export function splitMessage(bytes: Buffer, udhi: boolean, sar: SarFields = {}): Split {
  let payload = bytes;
  let concatenation: Concatenation | undefined;
  if (udhi && bytes.length > 0) {
    const headerLength = (bytes[0] as number) + 1;
    if (headerLength <= bytes.length) {
      payload = bytes.subarray(headerLength);
      concatenation = udhConcatenation(bytes.subarray(1, headerLength));
    }
  }
  concatenation ??= sarConcatenation(sar);
  return concatenation ? { payload, concatenation } : { payload };
}

/** The concatenation element of a UDH's information elements (without the length octet). */
export function udhConcatenation(elements: Buffer): Concatenation | undefined {
  let found: Concatenation | undefined;
  for (let at = 0; at + 2 <= elements.length; ) {
    const iei = elements[at] as number;
    const length = elements[at + 1] as number;
    const data = elements.subarray(at + 2, at + 2 + length);
    at += 2 + length;
    if (data.length < length) break;
    if (iei === 0x00 && length === 3) {
      found = place(data[0] as number, 8, data[1] as number, data[2] as number);
    } else if (iei === 0x08 && length === 4) {
      found = place(data.readUInt16BE(0), 16, data[2] as number, data[3] as number);
    }
  }
  return found;
}

function sarConcatenation(sar: SarFields): Concatenation | undefined {
  if (sar.ref === undefined || sar.total === undefined || sar.seq === undefined) return undefined;
  return place(sar.ref, 16, sar.total, sar.seq);
}

function place(
  ref: number,
  refBits: 8 | 16,
  total: number,
  seq: number,
): Concatenation | undefined {
  if (total < 2 || seq < 1 || seq > total) return undefined;
  return { ref, refBits, total, seq };
}
