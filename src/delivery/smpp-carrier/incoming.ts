/**
 * What the SMSC sends this service: `deliver_sm` and `data_sm`, told apart by `esm_class` first,
 * TLVs second (src/smpp/recognition.ts).
 *
 * - Receipts go to the receipt inbox, answered once stored. A receipt names the part by the
 *   SMSC's message id; for parts this process submitted in the last minute it also carries our
 *   message id as a hint, so the worker waits for the recording of their submission instead of
 *   asking to retry.
 * - Mobile-originated messages go to the MO inbox, answered once the intake (src/inbound/) stored
 *   them: ESME_ROK; ESME_RX_R_APPN for a number no account owns; ESME_RX_T_APPN while the
 *   database fails (the SMSC delivers again later). Without an intake (a carrier built for
 *   delivery alone) they are acknowledged and logged.
 * - Anything else (a user acknowledgement, a conversation abort) is acknowledged and logged.
 */
import type { SmppPdu } from "smpp";
import type { PartOutcome } from "../../inbound/intake.ts";
import { type MoPart, partKey } from "../../inbound/mo-part.ts";
import type { Logger } from "../../logger.ts";
import { decodeText } from "../../smpp/alphabets.ts";
import { ESME_RX_R_APPN, ESME_RX_T_APPN } from "../../smpp/command-status.ts";
import { HeldInbox } from "../../smpp/held-inbox.ts";
import type { NationalNumbering } from "../../smpp/numbering.ts";
import { parseReceipt, receiptOutcome } from "../../smpp/receipts.ts";
import { incomingKind } from "../../smpp/recognition.ts";
import type { CarrierReceipt } from "../carrier.ts";
import { moPartOfPdu } from "./mo-pdu.ts";
import type { ReceiptInbox } from "./receipt-inbox.ts";

const HINT_TTL_MS = 60_000;

/** Stores a batch of MO PDUs (src/inbound/intake.ts `take`): one outcome each; throws when it cannot. */
export type InboundParts = (parts: MoPart[]) => Promise<PartOutcome[]>;

export interface IncomingOptions {
  receipts: ReceiptInbox;
  /** The MO intake; undefined: MO are acknowledged and logged. */
  inbound?: InboundParts | undefined;
  /** Names the carrier connection in the MO's keys, e.g. `smpp://test@127.0.0.1:2775`. */
  carrier: string;
  /** An MO waits this long for others to be stored with it in one batch. */
  moCollectMs: number;
  /** The carrier's country, for MO destinations written as national numbers. */
  national?: NationalNumbering | undefined;
  logger: Logger;
}

interface HeldMo {
  part: MoPart;
  key: string;
}

export class IncomingPdus {
  /** Mobile-originated PDUs received. */
  private moReceived = 0;
  /** carrier id -> message id of recent submissions, oldest first. */
  private readonly hints = new Map<string, { messageId: number; at: number }>();
  private readonly receipts: ReceiptInbox;
  private readonly inbound: HeldInbox<HeldMo> | undefined;
  private readonly carrier: string;
  private readonly logger: Logger;

  constructor(private readonly options: IncomingOptions) {
    this.receipts = options.receipts;
    this.carrier = options.carrier;
    this.logger = options.logger;
    if (options.inbound) {
      this.inbound = new HeldInbox<HeldMo>({
        what: "mobile-originated message",
        logger: options.logger,
        key: (held) => held.key,
        holdRetryMs: 0,
        batchSize: 500,
        collectMs: options.moCollectMs,
        failureStatus: ESME_RX_T_APPN,
      });
    }
  }

  start(): void {
    const take = this.options.inbound;
    this.inbound?.start(async (held) => {
      const outcomes = await (take as InboundParts)(held.map((h) => h.part));
      const status = new Map<string, number>();
      for (const [i, outcome] of outcomes.entries())
        if (outcome === "unowned") status.set((held[i] as HeldMo).key, ESME_RX_R_APPN);
      return { status };
    });
  }

  /** Stops storing MO (waits for the batch in flight); what is held stays unanswered. */
  async stop(): Promise<void> {
    await this.inbound?.stop();
  }

  /** MO received, and the MO inbox's counts (stored, failed: answered ESME_RX_T_APPN). */
  get mo(): { received: number; held?: number; stored?: number; failed?: number } {
    const stats = this.inbound?.stats();
    return stats
      ? { received: this.moReceived, held: stats.held, stored: stats.stored, failed: stats.failed }
      : { received: this.moReceived };
  }

  /** Remembers which message a carrier id belongs to, for receipts that come back soon. */
  hint(carrierId: string, messageId: number): void {
    const now = performance.now();
    this.hints.set(carrierId, { messageId, at: now });
    for (const [id, entry] of this.hints) {
      if (now - entry.at < HINT_TTL_MS) break;
      this.hints.delete(id);
    }
  }

  /** A `deliver_sm` or `data_sm`; `respond` answers it on the connection it came on. */
  receive(pdu: SmppPdu, respond: (status?: number) => boolean): void {
    const kind = incomingKind(pdu.esm_class ?? 0, {
      receiptedMessageId: pdu.receipted_message_id,
      messageState: pdu.message_state,
    });
    if (kind === "mo") {
      this.mobileOriginated(pdu, respond);
      return;
    }
    if (kind === "other") {
      respond();
      this.logger.info(
        { command: pdu.command, esmClass: pdu.esm_class, from: pdu.source_addr },
        "smpp: an acknowledgement that is neither a receipt nor a message acknowledged",
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
      carrierStatus: { stat: info.stat, err: info.err, doneTime: info.doneTime },
      at: new Date(),
    };
    if (info.networkErrorCode !== undefined)
      (receipt.carrierStatus as { networkErrorCode?: string }).networkErrorCode =
        info.networkErrorCode;
    if (outcome.status === "DELIVERY_ERROR") receipt.reason = outcome.reason;
    const hint = this.hints.get(info.carrierId);
    if (hint) receipt.messageId = hint.messageId;
    this.receipts.add(receipt, () => respond());
  }

  private mobileOriginated(pdu: SmppPdu, respond: (status?: number) => boolean): void {
    this.moReceived++;
    let part: MoPart;
    try {
      part = moPartOfPdu(pdu, this.carrier, this.options.national);
    } catch (error) {
      this.logger.error(
        { err: error, command: pdu.command },
        "smpp: unreadable mobile-originated message",
      );
      respond(ESME_RX_T_APPN);
      return;
    }
    if (!this.inbound) {
      respond();
      this.logger.info(
        { from: part.from, to: part.to, text: decodeText(part.payload, part.dataCoding) },
        "smpp: mobile-originated message acknowledged (no inbound intake on this carrier)",
      );
      return;
    }
    this.inbound.add({ part, key: partKey(part) }, respond);
  }
}
