/**
 * What an incoming `deliver_sm` or `data_sm` is (docs/design.md "Two-way messaging": "Receiving over
 * SMPP"): by `esm_class` first, TLVs second, never by its text. Pure.
 *
 * - Message type (bits 2-5) 0: an ordinary mobile-originated message, unless it carries both
 *   `receipted_message_id` and `message_state`, which only receipts do (some SMSCs leave the
 *   type at 0 on receipts).
 * - 0x04 SMSC delivery receipt, 0x08 SME delivery acknowledgement, 0x20 intermediate delivery
 *   notification: receipts (as Kannel reads them).
 * - 0x10 manual/user acknowledgement, 0x18 conversation abort: neither; acknowledged and logged.
 */

export type IncomingKind = "mo" | "receipt" | "other";

const MESSAGE_TYPE_BITS = 0x3c;
const RECEIPT_TYPES = new Set([0x04, 0x08, 0x20]);

export function incomingKind(
  esmClass: number,
  tlvs: { receiptedMessageId?: string | undefined; messageState?: number | undefined } = {},
): IncomingKind {
  const type = esmClass & MESSAGE_TYPE_BITS;
  if (type === 0) {
    const receiptTlvs = Boolean(tlvs.receiptedMessageId) && tlvs.messageState !== undefined;
    return receiptTlvs ? "receipt" : "mo";
  }
  return RECEIPT_TYPES.has(type) ? "receipt" : "other";
}
