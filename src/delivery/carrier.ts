/**
 * The carrier port (docs/design.md "Message lifecycle"): how the delivery worker hands message parts to an
 * SMS carrier and learns their fate. Adapters: the simulator (default, `simulator.ts`) and SMPP
 * (`smpp-carrier/adapter.ts`). The worker only knows this interface.
 *
 * - `submit` sends parts in bulk and answers one result per part, in order: accepted with the
 *   carrier's id of the part (SMPP `submit_sm_resp.message_id`), or refused.
 * - Receipts (SMPP `deliver_sm` delivery receipts) come back through the handler given to `start`,
 *   in batches. They are at least once: the carrier acknowledges a receipt only when the handler's
 *   promise resolves without listing it under `retry`; a receipt that throws or is listed is offered
 *   again later (the worker lists the ones whose part it cannot match yet, e.g. a receipt that
 *   overtook the recording of the submission). A receipt carries only the carrier's id, as SMPP's do.
 */
import type { MessagePart } from "../domain/message-part.ts";
import type { ReasonName } from "../domain/message-status.ts";
import type {
  MultipartReceipts,
  ReceiptIdMatching,
  CarrierStatus as ReceiptStatus,
} from "../domain/receipt-ids.ts";

export type CarrierPart = MessagePart;

export type SubmitResult =
  | { ok: true; carrierId: string }
  | {
      ok: false;
      error: string;
      /**
       * The carrier failed as a whole rather than refusing this part (SMPP ESME_RSYSERR): nothing
       * was accepted, so with several carriers the message may go to the next of its route.
       */
      carrierFault?: boolean;
      /**
       * Not written: `SubmitOptions.mayWrite` said no (its recipient sent STOP after the claim's
       * screen). The carrier has nothing of it; the worker gives the message back to its queue.
       */
      heldBack?: true;
    };

/** What a submit call is told besides its parts. */
export interface SubmitOptions {
  /**
   * Asked right before the first part of each message is written (a carrier that queues parts
   * asks when it takes them from its queue): false leaves the message's parts unwritten, answered
   * `heldBack`. Once one part of a message is written, its others are written too.
   */
  mayWrite?: (part: CarrierPart) => boolean;
}

/**
 * What a `submit` that throws may tell: the parts the carrier accepted before the call failed, by
 * position in the parts given, with their carrier ids. With several carriers they stay its own.
 */
export interface SubmitFailure {
  acceptedParts?: ReadonlyMap<number, string>;
}

/** The parts accepted before `error` ended a submit call (none if it does not say). */
export function partsAcceptedBefore(error: unknown): ReadonlyMap<number, string> {
  const accepted = (error as SubmitFailure | undefined)?.acceptedParts;
  return accepted instanceof Map ? accepted : new Map();
}

export interface CarrierReceipt {
  carrierId: string;
  /**
   * The message of the part, when the carrier knows it (the simulator does; an SMPP receipt does
   * not). Only a hint for a cheaper lookup: the worker still checks the carrier id against it.
   */
  messageId?: number;
  status: "DELIVERED" | "DELIVERY_ERROR";
  /** With DELIVERY_ERROR. */
  reason?: ReasonName;
  /** What the carrier said, as written (SMPP: stat, err, network_error_code, done date). */
  carrierStatus?: ReceiptStatus;
  at: Date;
}

/** How the worker matches this carrier's receipts to parts (docs/design.md "Carrier-grade SMPP"). */
export interface ReceiptRules {
  ids: ReceiptIdMatching;
  multipart: MultipartReceipts;
}

export interface ReceiptHandlerResult {
  /** Carrier ids of receipts to offer again later (not acknowledged). */
  retry?: string[];
}

export type ReceiptHandler = (receipts: CarrierReceipt[]) => Promise<ReceiptHandlerResult>;

/**
 * What the carrier can take, which the worker paces itself by (so that queued work waits in the
 * database, in fair order, rather than in this process).
 */
export interface CarrierLimits {
  /**
   * Parts submitted and not yet answered, at most (SMPP: the window of every bind). The worker
   * also counts a part until its answer is recorded, so a crash resubmits at most this many.
   */
  window: number;
  /** Parts per second the carrier accepts (SMPP: the throughput sold, over every bind); undefined: no limit. */
  partsPerSecond?: number;
}

/** What `/health` shows of a carrier (e.g. the SMPP binds and the window in use). */
export interface CarrierStatus {
  /** e.g. `bound`, `unbound`. */
  state: string;
  [detail: string]: unknown;
}

export interface Carrier {
  /** Short name for logs, e.g. `simulator`, `smpp`. */
  readonly name: string;
  readonly limits: CarrierLimits;
  /**
   * Submits parts in bulk; one result per part, in the order given. Throws when the carrier cannot
   * be reached at all (with `SubmitFailure.acceptedParts` when it had accepted some before).
   */
  submit(parts: readonly CarrierPart[], options?: SubmitOptions): Promise<SubmitResult[]>;
  /** Connects and starts delivering receipts to `onReceipts`. */
  start(onReceipts: ReceiptHandler): Promise<void>;
  /** Stops delivering receipts, waits for the handler calls in flight, disconnects. */
  stop(): Promise<void>;
  /** How its receipts are matched; undefined: ids exactly, a receipt for every part. */
  readonly receiptRules?: ReceiptRules;
  /** Its connection state, for `/health` (optional). */
  status?(): CarrierStatus;
}
