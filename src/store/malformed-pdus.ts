/**
 * PDUs from an SMSC whose body did not decode (docs/design.md "Carrier-grade SMPP": "Every request
 * is answered"), kept for the operator as they came: the carrier connection, the time, the command
 * and sequence number, why it did not decode, and the bytes. The SMSC was answered
 * ESME_RX_P_APPN, so it will not send them again: this is the only copy.
 */
import type { Binary, Db } from "mongodb";

export interface MalformedPduDoc {
  carrier: string;
  at: Date;
  command: string;
  sequence: number;
  reason: string;
  bytes: Buffer | Binary;
}

export const MALFORMED_PDUS = "smpp_malformed_pdus";

export async function keepMalformedPdu(db: Db, doc: MalformedPduDoc): Promise<void> {
  await db.collection<MalformedPduDoc>(MALFORMED_PDUS).insertOne({ ...doc });
}
