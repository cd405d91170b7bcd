/**
 * An SMPP `deliver_sm` or `data_sm` that is a mobile-originated message, as the intake's MoPart.
 * Pure. Reads the raw bytes of `short_message` (else of the `message_payload` TLV, 0x0424):
 * the SMPP adapter keeps them undecoded (src/smpp/codec.ts), since a part decoded on its
 * own can break a character that spans two parts.
 */
import type { SmppPdu } from "smpp";
import { handsetAddress, type MoPart } from "../../inbound/mo-part.ts";
import { ESM_CLASS_UDHI, splitMessage } from "../../smpp/concatenation.ts";
import type { NationalNumbering } from "../../smpp/numbering.ts";

/** The bytes of a message field: raw, as the adapter's codec leaves them. */
function bytesOf(value: SmppPdu["short_message"]): Buffer {
  if (value === undefined || value === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(value)) return value;
  // Decoded by the package (its filters were not replaced): nothing exact is left to read.
  throw new Error("smpp: an MO's message arrived decoded; its raw bytes are needed");
}

export function moPartOfPdu(pdu: SmppPdu, carrier: string, national?: NationalNumbering): MoPart {
  const shortMessage = bytesOf(pdu.short_message);
  const body = shortMessage.length > 0 ? shortMessage : bytesOf(pdu.message_payload);
  const udhi = ((pdu.esm_class ?? 0) & ESM_CLASS_UDHI) !== 0;
  const split = splitMessage(body, udhi, {
    ref: numberField(pdu.sar_msg_ref_num),
    total: numberField(pdu.sar_total_segments),
    seq: numberField(pdu.sar_segment_seqnum),
  });
  const part: MoPart = {
    carrier,
    from: handsetAddress(pdu.source_addr ?? "", pdu.source_addr_ton ?? 0),
    to: pdu.destination_addr ?? "",
    toTon: pdu.dest_addr_ton ?? 0,
    dataCoding: pdu.data_coding ?? 0,
    payload: split.payload,
  };
  if (split.concatenation) part.concatenation = split.concatenation;
  if (national) part.national = national;
  return part;
}

function numberField(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}
