/**
 * How carriers write the id of a part twice, in `submit_sm_resp` and in its receipt, and not
 * always alike (docs/design.md "Carrier-grade SMPP": "Receipt ids, as carriers really write
 * them"): hex in one and decimal in the other, leading zeros, upper or lower case. Pure.
 *
 * With `auto`, a receipt whose id matches no part exactly is looked up among the forms of the same
 * number: its id read as decimal (when all digits) and as hex (when all hex digits), each written
 * in decimal and in hex of either case, without leading zeros and with them up to
 * `MAX_PADDED_WIDTH` characters (a stored id's width is not known to the receipt).
 */

/** `exact`: ids compared as written; `auto`: also as the same number in another form. */
export type ReceiptIdMatching = "exact" | "auto";

/** `any`: one final receipt of any part settles a multi-part message; `each`: every part its own. */
export type MultipartReceipts = "each" | "any";

/** Widest zero-padded form tried (SMSCs pad to 8, 10, 16 or 20 characters). */
const MAX_PADDED_WIDTH = 32;

/** The forms an id may have been written in by the other PDU, the id itself first. */
export function receiptIdForms(id: string): string[] {
  const forms = new Set<string>([id, id.toLowerCase(), id.toUpperCase()]);
  const values: bigint[] = [];
  if (/^[0-9]{1,40}$/.test(id)) values.push(BigInt(id));
  if (/^[0-9a-f]{1,32}$/i.test(id)) values.push(BigInt(`0x${id}`));
  for (const value of values) {
    for (const text of [value.toString(10), value.toString(16), value.toString(16).toUpperCase()]) {
      for (let width = text.length; width <= Math.max(MAX_PADDED_WIDTH, text.length); width++)
        forms.add(text.padStart(width, "0"));
    }
  }
  return [...forms];
}

/** What the carrier said of a part in its receipt, as written (docs/design.md: `carrierStatus`). */
export interface CarrierStatus {
  /** e.g. DELIVRD, UNDELIV. */
  stat: string;
  /** The `err:` of the text; "" when absent. */
  err: string;
  /** The network_error_code TLV, as hex of its 3 octets (type and code), when present. */
  networkErrorCode?: string;
  /** The `done date:` of the text as written (YYMMDDhhmm[ss]); "" when absent. */
  doneTime: string;
}
