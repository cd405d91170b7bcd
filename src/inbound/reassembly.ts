/**
 * A long MO from its parts, as bytes (docs/design.md "Two-way messaging": "reassembled from raw bytes in
 * any order, repeated parts dropped"). Pure: the intake reads a message's stored parts and asks
 * this whether they are all there and what they make; decoding comes after (alphabets.ts), on the
 * whole, so a character split across two parts is read whole.
 */

export interface ReceivedPart {
  /** 1-based place in the message. */
  seq: number;
  payload: Buffer;
}

export interface Assembly<P extends ReceivedPart = ReceivedPart> {
  /** The parts' payloads in order, each place once. */
  payload: Buffer;
  /** Distinct places received. */
  received: number;
  complete: boolean;
  /** The parts used, in order (the first received of each place). */
  used: P[];
}

/** Assembles the parts received so far, in the order received: a repeated place keeps its first. */
export function assemble<P extends ReceivedPart>(parts: readonly P[], total: number): Assembly<P> {
  const bySeq = new Map<number, P>();
  for (const part of parts) {
    if (part.seq < 1 || part.seq > total || bySeq.has(part.seq)) continue;
    bySeq.set(part.seq, part);
  }
  const used = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  return {
    payload: Buffer.concat(used.map((part) => part.payload)),
    received: used.length,
    complete: used.length === total,
    used,
  };
}
