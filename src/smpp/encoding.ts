/**
 * How one message part becomes one `submit_sm` (docs/design.md "Carrier: SMPP 3.4"), as pure functions:
 *
 * - The part is sent as the segmenting rule made it (src/domain/segments.ts), never split again.
 *   A part whose every code point is <= U+00FF: `data_coding` 3, ISO-8859-1 bytes; any other part:
 *   `data_coding` 8, UTF-16BE (code unit by code unit, so a surrogate pair stays a pair).
 * - Parts of a multi-part message carry concatenation: SAR TLVs (`sar_msg_ref_num`,
 *   `sar_total_segments`, `sar_segment_seqnum`; the default) or a UDH (IEI 0x00, 8-bit reference)
 *   with `esm_class` 0x40. One reference per message, derived from the message id, so a part
 *   submitted again after a crash carries the reference of its siblings.
 * - Destination: TON 1 / NPI 1, digits without `+`. Sender: digits (an optional `+`) TON 1 / NPI 1
 *   without `+`; anything else is alphanumeric, TON 5 / NPI 0.
 * - `registered_delivery` 1; `validity_period` relative (`YYMMDDhhmmss000R`) from the ttl left.
 */
import type { MessagePart } from "../domain/message-part.ts";

export type Concatenation = "sar" | "udh";

export const DATA_CODING_LATIN1 = 3;
export const DATA_CODING_UCS2 = 8;
export const ESM_CLASS_UDHI = 0x40;

export const TON_INTERNATIONAL = 1;
export const TON_ALPHANUMERIC = 5;
export const NPI_ISDN = 1;
export const NPI_UNKNOWN = 0;

/** Whether every code point of the part is <= U+00FF (the segmenting rule's Latin-1 test). */
export function isLatin1(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0xff) return false;
  return true;
}

/** `data_coding` and the bytes of one part's text. */
export function encodeText(text: string): { dataCoding: number; bytes: Buffer } {
  if (isLatin1(text)) return { dataCoding: DATA_CODING_LATIN1, bytes: Buffer.from(text, "latin1") };
  const bytes = Buffer.alloc(text.length * 2);
  for (let i = 0; i < text.length; i++) bytes.writeUInt16BE(text.charCodeAt(i), i * 2);
  return { dataCoding: DATA_CODING_UCS2, bytes };
}

export interface Address {
  ton: number;
  npi: number;
  addr: string;
}

/** The destination: international number, digits only. */
export function destinationAddress(to: string): Address {
  return { ton: TON_INTERNATIONAL, npi: NPI_ISDN, addr: to.startsWith("+") ? to.slice(1) : to };
}

/** The sender: a number (digits, optional `+`) is international, anything else alphanumeric. */
export function sourceAddress(from: string): Address {
  if (/^\+?\d+$/.test(from)) return destinationAddress(from);
  return { ton: TON_ALPHANUMERIC, npi: NPI_UNKNOWN, addr: from };
}

/**
 * SMPP relative time (`YYMMDDhhmmsstnnR`) of `seconds`, at least one second: days, hours,
 * minutes and seconds (no months or years: the longest ttl is hours).
 */
export function relativeValidity(seconds: number): string {
  let rest = Math.max(1, Math.floor(seconds));
  const ss = rest % 60;
  rest = Math.floor(rest / 60);
  const mm = rest % 60;
  rest = Math.floor(rest / 60);
  const hh = rest % 24;
  const dd = Math.min(99, Math.floor(rest / 24));
  const two = (n: number) => String(n).padStart(2, "0");
  return `0000${two(dd)}${two(hh)}${two(mm)}${two(ss)}000R`;
}

/** The reference shared by the parts of one message: 16 bits for SAR, 8 for a UDH. */
export function concatenationReference(messageId: number, kind: Concatenation): number {
  return kind === "sar" ? messageId & 0xffff : messageId & 0xff;
}

/** UDH of a concatenated part: length 5, IEI 0x00 (8-bit reference), IE length 3, ref, total, seq. */
export function concatenationUdh(reference: number, total: number, seq: number): Buffer {
  return Buffer.from([0x05, 0x00, 0x03, reference & 0xff, total, seq]);
}

/**
 * The `submit_sm` parameters and TLVs of a part, in the `smpp` package's names. `now` (ms) is the
 * time of the submission on the same clock as `part.expiresAt`.
 */

export function submitSmFields(
  part: MessagePart,
  options: { now: number; concatenation: Concatenation },
): Record<string, unknown> {
  const source = sourceAddress(part.from);
  const destination = destinationAddress(part.to);
  const { dataCoding, bytes } = encodeText(part.text);
  const fields: Record<string, unknown> = {
    service_type: "",
    source_addr_ton: source.ton,
    source_addr_npi: source.npi,
    source_addr: source.addr,
    dest_addr_ton: destination.ton,
    dest_addr_npi: destination.npi,
    destination_addr: destination.addr,
    esm_class: 0,
    registered_delivery: 1,
    validity_period: relativeValidity((part.expiresAt.getTime() - options.now) / 1000),
    data_coding: dataCoding,
    short_message: bytes,
  };
  if (part.partCount > 1) {
    const reference = concatenationReference(part.messageId, options.concatenation);
    if (options.concatenation === "sar") {
      fields.sar_msg_ref_num = reference;
      fields.sar_total_segments = part.partCount;
      fields.sar_segment_seqnum = part.partIndex + 1;
    } else {
      fields.esm_class = ESM_CLASS_UDHI;
      fields.short_message = Buffer.concat([
        concatenationUdh(reference, part.partCount, part.partIndex + 1),
        bytes,
      ]);
    }
  }
  return fields;
}
