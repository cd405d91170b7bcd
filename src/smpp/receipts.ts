/**
 * Delivery receipts over SMPP (docs/design.md "Carrier: SMPP 3.4"), as pure functions: which `deliver_sm`
 * is a receipt, the part's id in it, and the mapping of `stat`/`err` to the spec's statuses and
 * non-delivery reasons.
 *
 * - Which `deliver_sm` or `data_sm` is a receipt: src/smpp/recognition.ts (`esm_class`
 *   first, TLVs second).
 * - The part is named by the `receipted_message_id` TLV, else by the `id:` of the receipt text;
 *   either is compared exactly as the SMSC wrote the `message_id` of its `submit_sm_resp`.
 * - `stat:DELIVRD` → DELIVERED; `EXPIRED` → Expired; UNDELIV, REJECTD, UNKNOWN, DELETED by `err:`
 *   (GSM MAP error, decimal): 001 and 005 → Unroutable; 027 and 031 → Unreachable; 032 → SIM card
 *   full; anything else → Undelivered. Other states (ENROUTE, ACCEPTD) are not final: no receipt.
 *   Without a `stat:` in the text, the `message_state` TLV gives it.
 *
 * Text: the raw bytes (codec.ts), read as Latin-1 whatever `data_coding` 0, 1 or 3 says (a
 * receipt's text is ASCII; read through the GSM 03.38 table, `@` would become `¡`, `_` `§`, `$`
 * `¤`...), as UTF-16BE with `data_coding` 8.
 */

import type { SmppPdu } from "smpp";
import type { ReasonName } from "../domain/message-status.ts";

/** What a receipt says about its part, before it is matched to a message. */
export interface ReceiptInfo {
  carrierId: string;
  /** The `stat:` of the text (or from `message_state`), e.g. DELIVRD. */
  stat: string;
  /** The `err:` of the text, as written; "" when absent. */
  err: string;
  /** The network_error_code TLV (type and code), as hex; undefined when absent. */
  networkErrorCode?: string;
  /** The `done date:` of the text, as written; "" when absent. */
  doneTime: string;
}

export type ReceiptOutcome =
  | { status: "DELIVERED" }
  | { status: "DELIVERY_ERROR"; reason: ReasonName }
  | undefined;

/** The text of a deliver_sm (short_message, else message_payload), as the SMSC's bytes meant it. */
export function deliverSmText(pdu: SmppPdu): string {
  const body = messageBody(pdu.short_message) ?? messageBody(pdu.message_payload);
  if (!body) return "";
  return (pdu.data_coding ?? 0) === 8 ? utf16be.decode(body) : body.toString("latin1");
}

/** The raw bytes of a message field (codec.ts keeps them raw); undefined when empty. */
function messageBody(value: SmppPdu["short_message"]): Buffer | undefined {
  return Buffer.isBuffer(value) && value.length > 0 ? value : undefined;
}

const utf16be = new TextDecoder("utf-16be");

/** The `key:value` fields of a receipt text (SMPP 3.4 appendix B); keys lowercased. */
export function receiptTextFields(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  const textAt = text.search(/\btext:/i);
  const head = textAt >= 0 ? text.slice(0, textAt) : text;
  if (textAt >= 0) fields.text = text.slice(textAt + 5);
  for (const match of head.matchAll(/(submit date|done date|[a-z_]+):(\S*)/gi)) {
    const key = (match[1] as string).toLowerCase();
    fields[key] ??= match[2] as string;
  }
  return fields;
}

const MESSAGE_STATES: Readonly<Record<number, string>> = {
  1: "ENROUTE",
  2: "DELIVRD",
  3: "EXPIRED",
  4: "DELETED",
  5: "UNDELIV",
  6: "ACCEPTD",
  7: "UNKNOWN",
  8: "REJECTD",
};

/** The receipt in a deliver_sm, or undefined when it names no part. */
export function parseReceipt(pdu: SmppPdu): ReceiptInfo | undefined {
  const fields = receiptTextFields(deliverSmText(pdu));
  const carrierId = pdu.receipted_message_id || fields.id;
  if (!carrierId) return undefined;
  const stat =
    fields.stat?.toUpperCase() ??
    (pdu.message_state === undefined ? "" : (MESSAGE_STATES[pdu.message_state] ?? ""));
  let err = fields.err ?? "";
  // GSM network errors also come as the network_error_code TLV: type 3 (GSM), 2-byte code.
  const network = pdu.network_error_code;
  if (err === "" && Buffer.isBuffer(network) && network.length === 3 && network[0] === 3) {
    err = String(network.readUInt16BE(1)).padStart(3, "0");
  }
  const info: ReceiptInfo = { carrierId, stat, err, doneTime: fields["done date"] ?? "" };
  if (Buffer.isBuffer(network) && network.length > 0)
    info.networkErrorCode = network.toString("hex");
  return info;
}

/** The spec's status and reason for a receipt's `stat` and `err`; undefined for a state that is not final. */
export function receiptOutcome(stat: string, err: string): ReceiptOutcome {
  switch (stat.toUpperCase()) {
    case "DELIVRD":
      return { status: "DELIVERED" };
    case "EXPIRED":
      return { status: "DELIVERY_ERROR", reason: "Expired" };
    case "UNDELIV":
    case "REJECTD":
    case "UNKNOWN":
    case "DELETED":
      return { status: "DELIVERY_ERROR", reason: reasonOfError(err) };
    default:
      return undefined;
  }
}

/** The non-delivery reason of a GSM MAP error (`err:`, decimal). */
export function reasonOfError(err: string): ReasonName {
  const code = /^\d+$/.test(err.trim()) ? Number(err.trim()) : Number.NaN;
  switch (code) {
    case 1:
    case 5:
      return "Unroutable";
    case 27:
    case 31:
      return "Unreachable";
    case 32:
      return "SIM card full";
    default:
      return "Undelivered";
  }
}
