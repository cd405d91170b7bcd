/**
 * Reads one framed PDU (pdu-framer.ts) into the package's PDU object, and never throws
 * (docs/design.md "Carrier-grade SMPP": "Every request is answered").
 *
 * - A `deliver_sm` or `data_sm` is first checked field by field (bodyProblem): the package reads
 *   past a short field or a TLV cut short without a word, so the check is what finds them. Its
 *   mandatory fields must all be there, time fields empty or in SMPP's 16-character form, every
 *   TLV whole, numeric TLVs of their exact size. Unknown TLVs are skipped.
 * - Any PDU the package cannot decode, or a deliver_sm/data_sm that fails the check, becomes a PDU
 *   of its header alone (the package's own object, so `response()` still answers it), marked
 *   `malformed` with the reason: the owner answers it, and stores a deliver_sm or data_sm's bytes.
 */
import type { SmppPdu } from "smpp";
import smpp from "./codec.ts";
import { PDU_HEADER_BYTES } from "./pdu-framer.ts";

export interface ReadPdu {
  pdu: SmppPdu;
  /** Why its body could not be read; the PDU then holds only its header. */
  malformed?: string;
}

const DELIVER_SM = 0x00000005;
const DATA_SM = 0x00000103;

export function readPdu(bytes: Buffer): ReadPdu {
  const id = bytes.readUInt32BE(4);
  const problem = id === DELIVER_SM || id === DATA_SM ? bodyProblem(bytes) : undefined;
  if (problem === undefined) {
    try {
      return { pdu: new smpp.PDU(bytes) };
    } catch (error) {
      return { pdu: headerOnly(bytes), malformed: (error as Error).message };
    }
  }
  return { pdu: headerOnly(bytes), malformed: problem };
}

/** The PDU of the header alone: its command, status and sequence number. */
function headerOnly(bytes: Buffer): SmppPdu {
  const header = Buffer.from(bytes.subarray(0, PDU_HEADER_BYTES));
  header.writeUInt32BE(PDU_HEADER_BYTES, 0);
  return new smpp.PDU(header);
}

type Field = "cstring" | "int8" | "time" | "short_message";

const ADDRESSES: Field[] = ["cstring", "int8", "int8", "cstring", "int8", "int8", "cstring"];
/** SMPP 3.4 section 4.6.1 and 4.7.1: the mandatory fields, in order. */
const MANDATORY: Readonly<Record<number, readonly Field[]>> = {
  [DELIVER_SM]: [
    ...ADDRESSES,
    ...["int8", "int8", "int8", "time", "time", "int8", "int8", "int8", "int8"],
    "short_message",
  ] as Field[],
  [DATA_SM]: [...ADDRESSES, "int8", "int8", "int8"],
};

/** YYMMDDhhmmsstnnp: absolute (+/-) or relative (R). */
const SMPP_TIME = /^\d{15}[-+R]$/;

/** Sizes of the numeric TLVs the package reads, by tag. */
const NUMERIC_TLV_SIZES: ReadonlyMap<number, number> = (() => {
  const sizes = new Map<number, number>();
  const types = smpp.types.tlv;
  for (const tlv of Object.values(smpp.tlvs)) {
    const size =
      tlv.type === types.int8 ? 1 : tlv.type === types.int16 ? 2 : tlv.type === types.int32 ? 4 : 0;
    if (size > 0) sizes.set(tlv.id, size);
  }
  return sizes;
})();

/** What makes a deliver_sm's or data_sm's body unreadable, or undefined when it reads. */
export function bodyProblem(bytes: Buffer): string | undefined {
  const fields = MANDATORY[bytes.readUInt32BE(4)];
  if (!fields) return undefined;
  const end = bytes.length;
  let offset = PDU_HEADER_BYTES;
  for (const [i, field] of fields.entries()) {
    if (offset >= end) return `the body ends before mandatory field ${i + 1}`;
    if (field === "int8") offset += 1;
    else if (field === "short_message") {
      const length = bytes[offset] as number;
      if (offset + 1 + length > end) return `sm_length ${length} runs past the PDU`;
      offset += 1 + length;
    } else {
      const nul = bytes.indexOf(0, offset);
      if (nul < 0 || nul >= end) return `mandatory field ${i + 1} has no terminating NUL`;
      if (field === "time" && nul > offset) {
        const time = bytes.toString("latin1", offset, nul);
        if (!SMPP_TIME.test(time)) return `bad time field ${JSON.stringify(time)}`;
      }
      offset = nul + 1;
    }
  }
  while (offset < end) {
    if (end - offset < 4) return `${end - offset} octets after the last TLV`;
    const tag = bytes.readUInt16BE(offset);
    const length = bytes.readUInt16BE(offset + 2);
    offset += 4;
    const hex = `0x${tag.toString(16).padStart(4, "0")}`;
    if (offset + length > end) return `TLV ${hex} of ${length} octets is cut short`;
    const size = NUMERIC_TLV_SIZES.get(tag);
    if (size !== undefined && length !== size)
      return `TLV ${hex} has ${length} octets, not ${size}`;
    offset += length;
  }
  return undefined;
}
