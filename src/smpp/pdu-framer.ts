/**
 * Cuts the byte stream of one SMPP connection into PDUs by their `command_length` (docs/design.md
 * "Carrier-grade SMPP": "Framing is ours"). Pure: it holds the bytes of a PDU not yet whole.
 *
 * The stream cannot be framed, and the connection must go, only when a `command_length` is under
 * 16 (the header alone) or over `maxPduBytes`; what a body holds is never its concern (a body that
 * does not decode is answered: pdu-reader.ts).
 */

/** The header: command_length, command_id, command_status, sequence_number. */
export const PDU_HEADER_BYTES = 16;

export class UnframeableStream extends Error {
  constructor(readonly commandLength: number) {
    super(`cannot frame the stream: command_length ${commandLength}`);
    this.name = "UnframeableStream";
  }
}

export class PduFramer {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly maxPduBytes: number) {}

  /** Bytes received that do not make a whole PDU yet (0: between PDUs). */
  get partial(): number {
    return this.buffered;
  }

  /** The whole PDUs that `chunk` completes, in order; throws UnframeableStream. */
  push(chunk: Buffer): Buffer[] {
    // The common case, a chunk of whole PDUs with nothing held, is cut without copying.
    let data: Buffer;
    if (this.buffered === 0) data = chunk;
    else {
      this.chunks.push(chunk);
      data = Buffer.concat(this.chunks, this.buffered + chunk.length);
      this.chunks = [];
    }
    this.buffered = 0;
    const pdus: Buffer[] = [];
    let offset = 0;
    while (data.length - offset >= 4) {
      const length = data.readUInt32BE(offset);
      if (length < PDU_HEADER_BYTES || length > this.maxPduBytes)
        throw new UnframeableStream(length);
      if (data.length - offset < length) break;
      pdus.push(data.subarray(offset, offset + length));
      offset += length;
    }
    if (offset < data.length) {
      // Copied: the rest must not pin the whole chunk (up to 64 KB) while it waits.
      const rest = Buffer.from(data.subarray(offset));
      this.chunks.push(rest);
      this.buffered = rest.length;
    }
    return pdus;
  }
}
