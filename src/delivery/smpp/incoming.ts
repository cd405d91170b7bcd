/**
 * What the SMSC sends this service: delivery receipts, and mobile-originated messages, which this
 * service does not handle (acknowledged and logged). A receipt names the part by the SMSC's
 * message id; for parts this process submitted in the last minute it also carries our message id
 * as a hint, so the worker waits for the recording of their submission instead of asking to retry.
 */
import type { SmppPdu } from "smpp";
import type { Logger } from "../../logger.ts";
import type { CarrierReceipt } from "../carrier.ts";
import type { ReceiptInbox } from "./receipt-inbox.ts";
import { isReceipt, moText, parseReceipt, receiptOutcome } from "./receipts.ts";

const HINT_TTL_MS = 60_000;

export class IncomingPdus {
  /** Mobile-originated messages acknowledged. */
  mo = 0;
  /** carrier id -> message id of recent submissions, oldest first. */
  private readonly hints = new Map<string, { messageId: number; at: number }>();

  constructor(
    private readonly inbox: ReceiptInbox,
    private readonly logger: Logger,
  ) {}

  /** Remembers which message a carrier id belongs to, for receipts that come back soon. */
  hint(carrierId: string, messageId: number): void {
    const now = performance.now();
    this.hints.set(carrierId, { messageId, at: now });
    for (const [id, entry] of this.hints) {
      if (now - entry.at < HINT_TTL_MS) break;
      this.hints.delete(id);
    }
  }

  /** A `deliver_sm`: a receipt goes to the inbox (acknowledged once stored), anything else is acknowledged. */
  deliverSm(pdu: SmppPdu, respond: (status?: number) => boolean): void {
    if (!isReceipt(pdu)) {
      respond();
      this.mo++;
      this.logger.info(
        {
          from: pdu.source_addr,
          to: pdu.destination_addr,
          dataCoding: pdu.data_coding,
          text: moText(pdu),
        },
        "smpp: mobile-originated message acknowledged (not handled by this service)",
      );
      return;
    }
    const info = parseReceipt(pdu);
    const outcome = info && receiptOutcome(info.stat, info.err);
    if (!info || !outcome) {
      respond();
      this.logger.info(
        { carrierId: info?.carrierId, stat: info?.stat },
        info
          ? "smpp: receipt of a state that is not final acknowledged"
          : "smpp: receipt without an id acknowledged and dropped",
      );
      return;
    }
    const receipt: CarrierReceipt = {
      carrierId: info.carrierId,
      status: outcome.status,
      at: new Date(),
    };
    if (outcome.status === "DELIVERY_ERROR") receipt.reason = outcome.reason;
    const hint = this.hints.get(info.carrierId);
    if (hint) receipt.messageId = hint.messageId;
    this.inbox.add(receipt, () => respond());
  }
}
