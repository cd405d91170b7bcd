/**
 * Reads a test SMSC's PDU file (test/support/smsc.ts `pduFile`) as it grows: what the SMSC
 * logged, also after it was killed, without asking its control port for a growing log.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import type { Pdu } from "../test/support/smsc-pdus.ts";

export class PduTail {
  private offset: number;
  private partial = "";

  /** `fromEnd`: only what is written from now on (a file kept across rounds). */
  constructor(
    private readonly path: string,
    fromEnd = false,
  ) {
    this.offset = fromEnd ? this.size() : 0;
  }

  /** The records written since the last call. */
  read(): Pdu[] {
    const fd = openSync(this.path, "r");
    try {
      const size = fstatSync(fd).size;
      if (size <= this.offset) return [];
      const buffer = Buffer.alloc(size - this.offset);
      const n = readSync(fd, buffer, 0, buffer.length, this.offset);
      this.offset += n;
      const lines = (this.partial + buffer.toString("utf8", 0, n)).split("\n");
      this.partial = lines.pop() ?? "";
      return lines.filter(Boolean).map((line) => JSON.parse(line) as Pdu);
    } finally {
      closeSync(fd);
    }
  }

  private size(): number {
    const fd = openSync(this.path, "r");
    try {
      return fstatSync(fd).size;
    } finally {
      closeSync(fd);
    }
  }
}

/** A submit_sm the SMSC read. */
export const isSubmit = (p: Pdu) => p.command === "submit_sm" && p.dir === "in";
/** A submit_sm_resp the SMSC wrote with ESME_ROK: a part submitted and acknowledged. */
export const isAccepted = (p: Pdu) =>
  p.command === "submit_sm_resp" && p.dir === "out" && p.status === 0;

/** The destinations whose submit_sm this log answered with ESME_ROK (by bind and sequence). */
export function acceptedDestinations(log: Pdu[]): Set<string> {
  const waiting = new Map<string, string | undefined>();
  const accepted = new Set<string>();
  for (const p of log) {
    const key = `${p.bind}:${p.sequence}`;
    if (isSubmit(p)) waiting.set(key, p.destination_addr);
    else if (p.command === "submit_sm_resp" && p.dir === "out") {
      const to = waiting.get(key);
      waiting.delete(key);
      if (p.status === 0 && to !== undefined) accepted.add(to);
    }
  }
  return accepted;
}
