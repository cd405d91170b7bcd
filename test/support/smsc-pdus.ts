/**
 * The test SMSC's PDU log (test/support/smsc.ts): each PDU as it crossed the wire, and readers of
 * its fields, of the log file it keeps (`pduFile`) and of a receipt's text.
 */
import { readFileSync } from "node:fs";

export interface PduTlv {
  tag: number;
  value_hex: string;
}

/**
 * One PDU as it crossed the wire, decoded from its bytes; `GET /pdus` returns them in the order
 * the SMSC saw them (an outgoing PDU is logged just before it is written). `at` is epoch ms with
 * microseconds. Binds are numbered per TCP connection from 1 (the bind request is logged under
 * the number of its connection).
 */
export interface Pdu {
  /** Position in the log since the last reset. */
  index: number;
  at: number;
  dir: "in" | "out";
  bind: number;
  /** submit_sm, submit_sm_resp, deliver_sm, deliver_sm_resp, bind_transceiver, enquire_link, unbind, generic_nack... */
  command: string;
  command_id: number;
  status: number;
  sequence: number;
  length: number;
  // submit_sm and deliver_sm
  service_type?: string;
  source_addr_ton?: number;
  source_addr_npi?: number;
  source_addr?: string;
  dest_addr_ton?: number;
  dest_addr_npi?: number;
  destination_addr?: string;
  esm_class?: number;
  protocol_id?: number;
  priority_flag?: number;
  schedule_delivery_time?: string;
  validity_period?: string;
  registered_delivery?: number;
  replace_if_present_flag?: number;
  data_coding?: number;
  sm_default_msg_id?: number;
  sm_length?: number;
  short_message_hex?: string;
  /** TLVs in wire order (submit_sm, deliver_sm, bind_*_resp). */
  optional_parameters?: PduTlv[];
  /** submit_sm_resp / deliver_sm_resp with a body. */
  message_id?: string;
  /** bind_* and bind_*_resp (the password is never logged). */
  system_id?: string;
  system_type?: string;
  interface_version?: number;
  /** Set when the body could not be decoded: the whole PDU. */
  malformed_hex?: string;
}

/** The records of a `pduFile`, in the order written (a line cut off by a kill is left out). */
export function readPduFile(path: string): Pdu[] {
  const records: Pdu[] = [];
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.endsWith("}")) records.push(JSON.parse(line) as Pdu);
  }
  return records;
}

/** The short_message bytes of a submit_sm / deliver_sm record. */
export function shortMessage(pdu: Pdu): Buffer {
  return Buffer.from(pdu.short_message_hex ?? "", "hex");
}

/** The value of the first TLV with this tag, if any. */
export function tlv(pdu: Pdu, tag: number): Buffer | undefined {
  const found = pdu.optional_parameters?.find((p) => p.tag === tag);
  return found ? Buffer.from(found.value_hex, "hex") : undefined;
}

/** The `key:value` fields of a receipt text (`id`, `sub`, `dlvrd`, `stat`, `err`, `text`...). */
export function receiptFields(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  const textAt = text.indexOf(" text:");
  const head = textAt >= 0 ? text.slice(0, textAt) : text;
  if (textAt >= 0) fields.text = text.slice(textAt + 6);
  for (const match of head.matchAll(/(submit date|done date|[a-z]+):(\S*)/gi)) {
    fields[match[1]!.toLowerCase()] = match[2]!;
  }
  return fields;
}
