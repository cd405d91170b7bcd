/**
 * Receipts received over SMPP, held until they are stored (held-inbox.ts): keyed by the part's
 * carrier id; a receipt the worker cannot match yet (its submission not recorded yet, or an id
 * of a part submitted by an instance that crashed before recording it) is offered again for
 * `holdUnknownMs`, then answered, logged and dropped; while storing fails, receipts are offered
 * again and never answered.
 */

import type { Logger } from "../../logger.ts";
import { HeldInbox } from "../../smpp/held-inbox.ts";
import type { CarrierReceipt } from "../carrier.ts";

export type { Acknowledge } from "../../smpp/held-inbox.ts";

export interface ReceiptInboxOptions {
  logger: Logger;
  /** How long a receipt the handler cannot match is held before it is answered and dropped. */
  holdUnknownMs: number;
  /** Receipts per handler call at most. */
  batchSize: number;
  /** How long a receipt waits for others to be stored with it in one batch. Default 0. */
  collectMs?: number;
}

export class ReceiptInbox extends HeldInbox<CarrierReceipt> {
  constructor(options: ReceiptInboxOptions) {
    super({
      what: "receipt",
      logger: options.logger,
      key: (receipt) => receipt.carrierId,
      holdRetryMs: options.holdUnknownMs,
      retryMeans: "for unknown message ids",
      batchSize: options.batchSize,
      collectMs: options.collectMs,
    });
  }
}
