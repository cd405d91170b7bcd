/**
 * Message statuses, non-delivery reasons, the status machine and the multi-part rule
 * (docs/sms-api.md "States and transitions", docs/design.md "Message lifecycle", "Multi-part status", "Batch counters").
 */

/** A message's status as stored, written on REST and in webhooks (the spec's names). */
export const STATUS_NAMES = [
  "ACCEPTED",
  "SENT",
  "DELIVERED",
  "SEND_ERROR",
  "DELIVERY_ERROR",
  "CANCELED",
] as const;
export type StatusName = (typeof STATUS_NAMES)[number];

/** Reasons for non-delivery, in the spec's words; they go with DELIVERY_ERROR only. */
export const REASON_NAMES = [
  "Undelivered",
  "Unreachable",
  "Expired",
  "SIM card full",
  "Unroutable",
] as const;
export type ReasonName = (typeof REASON_NAMES)[number];

export function isStatusName(s: string): s is StatusName {
  return (STATUS_NAMES as readonly string[]).includes(s);
}

export function isReasonName(s: string): s is ReasonName {
  return (REASON_NAMES as readonly string[]).includes(s);
}

/** Spec rule: resending an Expired message may succeed; for any other reason it most likely fails. */
export function isRetryableReason(reason: ReasonName): boolean {
  return reason === "Expired";
}

/**
 * Allowed moves. No self-transitions (a repeated receipt is a no-op for the caller, not a change):
 * - ACCEPTED → SENT, ACCEPTED → SEND_ERROR (carrier refused the submission);
 * - ACCEPTED → DELIVERY_ERROR: the ttl ran out before the message could be sent (reason Expired),
 *   or, for a multi-part message, one part failed while another was not sent yet;
 * - SENT → DELIVERED, SENT → DELIVERY_ERROR (receipt with a reason, or Expired when no receipt within ttl).
 * DELIVERED, SEND_ERROR and DELIVERY_ERROR are final.
 */
const TRANSITIONS: Readonly<Record<StatusName, readonly StatusName[]>> = {
  // CANCELED (docs/design.md "Message reads, client references, scheduled sends and cancel") is a
  // sixth status beyond the spec's five: only an account's cancel moves a message there, and only
  // while no carrier took it and no worker holds its claim.
  ACCEPTED: ["SENT", "SEND_ERROR", "DELIVERY_ERROR", "CANCELED"],
  SENT: ["DELIVERED", "DELIVERY_ERROR"],
  DELIVERED: [],
  SEND_ERROR: [],
  DELIVERY_ERROR: [],
  CANCELED: [],
};

export function canTransition(from: StatusName, to: StatusName): boolean {
  return TRANSITIONS[from].includes(to);
}

export function isFinal(status: StatusName): boolean {
  return TRANSITIONS[status].length === 0;
}

/** DELIVERY_ERROR must carry a reason; every other status carries none. */
export function isValidReasonFor(status: StatusName, reason: ReasonName | undefined): boolean {
  return status === "DELIVERY_ERROR" ? reason !== undefined : reason === undefined;
}

/**
 * One status for a message from the statuses of its parts (at least one), by precedence:
 * 1. DELIVERY_ERROR if any part has it ("any part fails");
 * 2. SEND_ERROR if any part's submission failed (the recipient cannot get the whole text);
 * 3. DELIVERED if every part is;
 * 4. SENT if every part is SENT or DELIVERED;
 * 5. ACCEPTED otherwise (some part is not sent yet).
 * A single part's status is the message's. The result of this memoryless rule can move from
 * SEND_ERROR to DELIVERY_ERROR as later parts fail; use `nextMessageStatus` to keep a final status.
 */
export function combinePartStatuses(partStatuses: readonly StatusName[]): StatusName {
  if (partStatuses.length === 0) throw new RangeError("a message has at least one part");
  let sendError = false;
  let allDelivered = true;
  let allSent = true;
  for (const s of partStatuses) {
    if (s === "DELIVERY_ERROR") return "DELIVERY_ERROR";
    if (s === "SEND_ERROR") sendError = true;
    if (s !== "DELIVERED") allDelivered = false;
    if (s !== "SENT" && s !== "DELIVERED") allSent = false;
  }
  if (sendError) return "SEND_ERROR";
  if (allDelivered) return "DELIVERED";
  if (allSent) return "SENT";
  return "ACCEPTED";
}

/**
 * The message's status after its parts changed: once final it stays (the first final status wins,
 * it is the one notified); otherwise `combinePartStatuses`. From ACCEPTED the result may be DELIVERED
 * directly if several parts moved at once; whether to notify the skipped SENT is the caller's choice.
 */
export function nextMessageStatus(
  current: StatusName,
  partStatuses: readonly StatusName[],
): StatusName {
  return isFinal(current) ? current : combinePartStatuses(partStatuses);
}

export interface BatchCounters {
  sentCount: number;
  deliveredCount: number;
  undeliveredCount: number;
  /** CANCELED messages, counted in undeliveredCount too. */
  canceledCount: number;
  isActive: boolean;
}

/**
 * Batch counters over the statuses of its accepted messages (docs/design.md "Batch counters"):
 * sentCount = at SENT or later (SENT, DELIVERED, DELIVERY_ERROR; SEND_ERROR was never sent);
 * deliveredCount = DELIVERED; undeliveredCount = DELIVERY_ERROR + SEND_ERROR;
 * CANCELED counts as undelivered (and in canceledCount); isActive while delivered + undelivered
 * < accepted.
 */
export function batchCounters(acceptedStatuses: Iterable<StatusName>): BatchCounters {
  let accepted = 0;
  let sentCount = 0;
  let deliveredCount = 0;
  let undeliveredCount = 0;
  let canceledCount = 0;
  for (const s of acceptedStatuses) {
    accepted++;
    if (s === "SENT" || s === "DELIVERED" || s === "DELIVERY_ERROR") sentCount++;
    if (s === "DELIVERED") deliveredCount++;
    else if (s === "DELIVERY_ERROR" || s === "SEND_ERROR") undeliveredCount++;
    else if (s === "CANCELED") {
      undeliveredCount++;
      canceledCount++;
    }
  }
  return {
    sentCount,
    deliveredCount,
    undeliveredCount,
    canceledCount,
    isActive: deliveredCount + undeliveredCount < accepted,
  };
}
