/** The SMPP carrier's settings (adapter.ts), from SMS_SMPP_* or a carriers file's `smpp` entry. */

import type { MultipartReceipts, ReceiptIdMatching } from "../../domain/receipt-ids.ts";
import type { Logger } from "../../logger.ts";
import type { Concatenation } from "../../smpp/encoding.ts";
import type { SmppEndpoint } from "../../smpp/endpoint.ts";
import type { NationalNumbering } from "../../smpp/numbering.ts";
import type { InboundParts } from "./incoming.ts";

/** A PDU whose body did not decode, as the operator gets it. */
export interface MalformedPdu {
  /** The carrier connection it came on, e.g. `smpp://test@127.0.0.1:2775`. */
  carrier: string;
  command: string;
  sequence: number;
  reason: string;
  bytes: Buffer;
  at: Date;
}

export interface SmppCarrierOptions {
  endpoint: SmppEndpoint;
  /** `system_type` of the binds (SMS_SMPP_SYSTEM_TYPE). Default "". */
  systemType?: string;
  /** Transceiver binds (SMS_SMPP_BINDS). Default 1. */
  binds?: number;
  /** Unacknowledged submit_sm per bind (SMS_SMPP_WINDOW). Default 10. */
  window?: number;
  /** submit_sm per second per bind (SMS_SMPP_TPS); undefined: no limit. */
  tps?: number;
  /** enquire_link period (SMS_SMPP_ENQUIRE_LINK_S), in ms. Default 30000. */
  enquireLinkMs?: number;
  /** SAR TLVs (default) or a UDH for multi-part messages (SMS_SMPP_CONCATENATION). */
  concatenation?: Concatenation;
  /** A request without its response after this long breaks the bind. Default 10000. */
  responseTimeoutMs?: number;
  /** How long `submit` waits for a bind before it throws. Default 10000. */
  unboundWaitMs?: number;
  /** A part whose submit_sm goes unanswered more often than this fails its call. Default 3. */
  maxLostPerPart?: number;
  /** A receipt waits this long for others to be stored with it in one batch. Default 50. */
  receiptCollectMs?: number;
  /**
   * Receipts that match no recorded part are answered and dropped after this long. Default
   * `unboundWaitMs` + 10000: a receipt of a part accepted in a call that the binds going down cut
   * off is still held when the worker records that part (submission.ts), after `unboundWaitMs`.
   */
  holdUnknownReceiptsMs?: number;
  /** Rebinding backoff: first delay and cap. Defaults 1000 and 30000. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  connectTimeoutMs?: number;
  /** Mobile-originated messages go to this intake (src/inbound/intake.ts); else acknowledged and logged. */
  inbound?: InboundParts | undefined;
  /** An MO waits this long for others to be stored with it in one batch. Default 5. */
  moCollectMs?: number;
  /** PDUs longer than this cannot be framed: the bind is closed and bound again. Default 70000. */
  maxPduBytes?: number;
  /** A PDU begun and not whole after this long closes the bind (ms). Default 30000. */
  readTimeoutMs?: number;
  /**
   * Keeps the bytes of a deliver_sm or data_sm whose body does not decode (smpp_malformed_pdus);
   * it is answered ESME_RX_P_APPN once this settled. Undefined: only logged.
   */
  keepMalformed?: ((pdu: MalformedPdu) => Promise<void>) | undefined;
  /** The carrier's country, for MO destinations written as national numbers (TON 0 and 2). */
  national?: NationalNumbering | undefined;
  /** How receipt ids are matched to the parts' ids (docs/design.md). Default `auto`. */
  receiptIds?: ReceiptIdMatching;
  /** One final receipt of any part settles a multi-part message (`any`, default), or `each`. */
  multipartReceipts?: MultipartReceipts;
  /** tls.connect options for smpps:// (e.g. `ca`); the system's CAs by default. */
  tlsOptions?: Record<string, unknown>;
  /** The clock of `CarrierPart.expiresAt` (the database server's), in ms. Default Date.now. */
  now?: () => number;
  logger: Logger;
}
