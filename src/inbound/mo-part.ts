/**
 * One mobile-originated PDU as the intake takes it, whatever the carrier (SMPP, the simulator):
 * its addresses, its coding, its payload bytes (without a UDH) and, for a part of a long message,
 * its place. Pure helpers: the keys that tell a redelivery from a new MO, and the addresses.
 */
import { createHash } from "node:crypto";
import type { Concatenation } from "../smpp/concatenation.ts";
import { destinationCandidates, type NationalNumbering } from "../smpp/numbering.ts";

export interface MoPart {
  /** The carrier connection it came on: parts and redeliveries are matched within it. */
  carrier: string;
  /** The handset (see `handsetAddress`). */
  from: string;
  /** The number it was sent to, as the carrier wrote it (see `numberCandidates`). */
  to: string;
  /** The TON the carrier gave `to` (SMPP `dest_addr_ton`); absent from the simulator. */
  toTon?: number;
  /** The carrier's country, for a `to` written as a national number. */
  national?: NationalNumbering;
  dataCoding: number;
  payload: Buffer;
  concatenation?: Concatenation;
}

/** 128 bits of SHA-256, base64url: a compact key (22 characters). */
function digest(fields: (string | number)[], payload?: Buffer): string {
  const hash = createHash("sha256").update(JSON.stringify(fields));
  if (payload) hash.update(payload);
  return hash.digest().subarray(0, 16).toString("base64url");
}

/** A part's reference and total (none: a message of its own). */
function placeOf(part: MoPart): number[] {
  const c = part.concatenation;
  return [c?.refBits ?? 0, c?.ref ?? 0, c?.total ?? 1];
}

/** The message a part belongs to: carrier, source, destination, reference and total (as Kannel). */
export function groupKey(part: MoPart): string {
  return digest(["group", part.carrier, part.from, part.to, ...placeOf(part)]);
}

/**
 * What the carrier sent in this PDU: the same carrier, source, destination, coding, place and
 * bytes give the same key, so an MO delivered again is recognised (design: "within 10 minutes").
 */
export function partKey(part: MoPart): string {
  const { carrier, from, to, dataCoding } = part;
  const seq = part.concatenation?.seq ?? 1;
  return digest(["part", carrier, from, to, dataCoding, ...placeOf(part), seq], part.payload);
}

/** The key of a message assembled from parts: its group and the parts it was made of. */
export function assembledKey(group: string, partKeys: readonly string[]): string {
  return digest(["message", group, ...partKeys]);
}

/** TON 1: international. */
const TON_INTERNATIONAL = 1;

/**
 * The handset's address as stored in `from`: a number the carrier marks international (TON 1),
 * or of 8 to 15 digits not starting with 0, or written with a leading 00, becomes E.164 with its
 * `+`, the form sends and opt-outs use; shorter numbers, national ones (a single leading 0) and
 * alphanumeric senders stay as sent.
 */
export function handsetAddress(address: string, ton: number): string {
  const trimmed = address.trim();
  if (!/^\+?\d+$/.test(trimmed)) return trimmed;
  if (trimmed.startsWith("+")) return trimmed;
  const digits = trimmed.startsWith("00") ? trimmed.slice(2) : trimmed;
  const international =
    ton === TON_INTERNATIONAL || trimmed.startsWith("00") || /^[1-9]\d{7,14}$/.test(digits);
  return international && /^[1-9]\d{6,14}$/.test(digits) ? `+${digits}` : trimmed;
}

/**
 * The assigned numbers an MO's destination may be, in the order tried: by the TON the carrier
 * gave it (src/smpp/numbering.ts), so an international number never matches a short code.
 */
export function numberCandidates(part: Pick<MoPart, "to" | "toTon" | "national">): string[] {
  return destinationCandidates(part.to, part.toTon, part.national);
}
