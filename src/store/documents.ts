import type { Binary, ObjectId } from "mongodb";
import type { ReasonName, StatusName } from "../domain/message-status.ts";
import type { RiskOverrides } from "../domain/risk-settings.ts";

// Shapes of the documents in MongoDB. Ids are integers from the sequences; status and reason names
// are the spec's strings so the database reads like the API.

export interface AccountDoc {
  /** The apiKey. */
  _id: string;
  name: string;
  /** SHA-256 digest of the apiSecret: `sha256$<digest b64>` (domain/credentials.ts). */
  secretHash: string;
  /** Standard Webhooks secret (`whsec_...`), needed in clear to sign. */
  webhookSecret: string;
  /** Credit in millionths of the account currency, so sums stay exact. */
  creditMicros: number;
  /** The credit it was created with: with the ledger's entries, its credit (store/ledger.ts). */
  initialCreditMicros?: number;
  statusUrl?: string;
  defaultSender?: string;
  /**
   * Quiet hours in the recipient's local time (`HH:MM`): messages due in them are held until they
   * end (docs/design.md "Message reads, client references, scheduled sends and cancel").
   */
  quietHours?: { start: string; end: string };
  /** Receives the account's inbound messages (docs/design.md "Two-way messaging"). */
  inboundUrl?: string;
  /** The account's own replies to the opt-out words; the defaults where absent. */
  keywordReplies?: Partial<Record<"STOP" | "START" | "HELP", string>>;
  /** Debits not yet confirmed by their stored messages; see store/charges.ts. */
  pendingCharges: PendingCharge[];
  /**
   * Raised after every addition to the account's opt-out list (absent: 0). A single send that found
   * the list empty debits only while it is unchanged (opt-outs/list-reads.ts).
   */
  optOutsVersion?: number;
  /** The operator's overrides of the toll-fraud guard for this account (domain/risk-settings.ts). */
  riskOverrides?: RiskOverrides;
  /** The account's own limits on what it spends (docs/design.md "Money"); absent: none. */
  spendControls?: SpendControlsDoc;
  /**
   * Charged less refunded, by UTC day of the charge (`YYYY-MM-DD`): every debit adds to its day in
   * the same update, so the daily limit is held by the debit's own filter (store/charges.ts).
   */
  spentByDay?: Record<string, number>;
  createdAt: Date;
  /** Set by the operator only (src/accounts/account-status.ts); absent: active. */
  status?: "suspended" | "closed";
  /** Why the account is suspended or closed; shown to it. */
  statusReason?: string;
  /**
   * The account's keys not revoked and its `full` ones among them (src/accounts/api-keys.ts),
   * kept beside the keys so that concurrent requests never make a 21st key nor delete the last
   * `full` one. Absent until its keys are first managed: then only the first key exists.
   */
  keyCount?: number;
  fullKeyCount?: number;
  /** The webhook secret before the last rotation, still signing until `webhookSecretRotatedAt` + overlap. */
  previousWebhookSecret?: string;
  webhookSecretRotatedAt?: Date;
}

export interface SpendControlsDoc {
  /** ISO 3166 alpha-2 codes (`ZZ`: numbers without a country); absent or empty: all. */
  allowedCountries?: string[];
  maxPricePerMessageMicros?: number;
  dailySpendLimitMicros?: number;
}

/**
 * One debit not yet confirmed: a batch, or the single sends of one account written together (one
 * entry per group, however many sends it holds). At most MAX_PENDING_CHARGES per account. A
 * "refund" is the other way round: credit to give back for accepted messages withdrawn before
 * submission (their recipient opted out, or no carrier took their parts), settled by
 * opt-outs/withdrawals.ts and money/refunds.ts. A "credit" is an operator's addition, applied with
 * its record; the record stays until its ledger entry is written (store/ledger.ts).
 */
export interface PendingCharge {
  /** Batch id for a batch; for single sends, the first message id of the group; a refund's own. */
  ref: number;
  kind: "message" | "batch" | "refund" | "credit";
  /** The whole debit. */
  amountMicros: number;
  /** When the debit was issued (server clock): the settler waits for it to age past its cutoff. */
  at: Date;
  /** Single sends: each message of the group and its price. Absent: the one message `ref`. */
  messages?: ChargedMessage[];
  /** A credit's note, for its ledger entry. */
  note?: string;
  /**
   * A refund of unsent parts (money/refunds.ts): its messages are the ones still marked
   * `refundDue`, which the settler claims for it before settling (markUnsentRefund).
   */
  unsentParts?: true;
}

export interface ChargedMessage {
  id: number;
  amountMicros: number;
}

export type NotificationState = "pending" | "delivered" | "gave_up" | "skipped";

export interface WebhookAttemptDoc {
  at: Date;
  /** 0 when no HTTP answer came. */
  httpStatus: number;
  error?: string;
  durationMs: number;
}

export interface NotificationDoc {
  status: StatusName;
  state: NotificationState;
  createdAt: Date;
  /** Resolved when the notification is sent: statusCallback, else the account's status URL. */
  url?: string;
  attempts: WebhookAttemptDoc[];
  nextAttemptAt?: Date;
}

/**
 * The webhook of an inbound message (docs/design.md "Two-way messaging"), when its account had an inbound
 * URL as it came: sent by the notifier in order per (account, sender), retried like a status's.
 */
export interface InboundWebhookDoc {
  state: NotificationState;
  /** The inbound URL it was last sent to. */
  url?: string;
  attempts: WebhookAttemptDoc[];
  nextAttemptAt?: Date;
}

export interface SegmentDoc {
  id: number;
  text: string;
}

export interface MessageDoc {
  _id: number;
  accountId: string;
  batchId?: number;
  to: string;
  from: string;
  text: string;
  /** Present only when the text was split. */
  segments?: SegmentDoc[];
  parts: number;
  /** Resolved at acceptance (delivery/routing): the route's name and its carriers, in order. */
  route?: StoredRoute;
  /** The destination's ISO 3166-1 alpha-2 country as libphonenumber parses it; absent for none. */
  country?: string;
  /** libphonenumber's type of the number, kept where routing needed it (routing/routing.ts). */
  numberType?: string;
  /** What each part cost, in micro-units: the message was charged parts times this. */
  pricePerPartMicros?: number;
  ttl: number;
  statusCallback?: string;
  /** The caller's own reference (1 to 128 characters), carried by reads and webhooks. */
  clientRef?: string;
  /**
   * When it was scheduled to go (sendAt): it is not handed to a carrier before, and its ttl counts
   * from it. Absent for a message sent at once.
   */
  sendAt?: Date;
  /** Held by the account's quiet hours until this (later than sendAt); its ttl counts from it. */
  holdUntil?: Date;
  status: StatusName;
  reason?: ReasonName;
  createdAt: Date;
  updatedAt: Date;
  /** (sendAt ?? createdAt) + ttl: not DELIVERED by then means DELIVERY_ERROR / Expired. */
  expiresAt: Date;
  /** Status history notifications, in order; one per status change, ACCEPTED included. */
  notifications: NotificationDoc[];
  /** Due time of the first pending notification; absent when none is pending. Indexed. */
  notifyAt?: Date;
  /** Lease of the notifier instance sending the first pending notification. */
  notifyLease?: Lease;
  /**
   * The group its notifications take turns in within its account (domain/notify-groups.ts): set
   * at acceptance, its retries' group while a retry waits, removed once its final status is
   * notified. Indexed with `notifyAt`.
   */
  notifyGroup?: string;
  /**
   * Due time of the next delivery step, absent once final: while ACCEPTED its rank in the
   * account's queue (accepted time minus its class's head start), while SENT its expiry. A claim
   * pushes it to the lease's end. Indexed with the account.
   */
  deliveryAt?: Date;
  deliveryClass?: "otp" | "single" | "batch";
  /** Submissions begun (counted before each call to the carrier): above 1 after a crash. */
  submitAttempts?: number;
  deliveryLease?: Lease;
  /** Carrier's ids of the parts, recorded with SENT. */
  carrierIds?: string[];
  /**
   * The carrier that took the parts (its name in the carriers file), recorded with them when the
   * plan has several: carrier ids are unique only per carrier, so receipts match on both. Also set
   * on an ACCEPTED message whose submission that carrier cut off after accepting some of its parts:
   * the rest go to it alone (delivery/routing/carrier-health.ts claimFilter).
   */
  carrier?: string;
  /** Carrier ids of the parts with a DELIVERED receipt so far (multi-part messages only). */
  deliveredParts?: string[];
  /**
   * What the carrier said in each receipt applied while the message was SENT (SMPP: stat, err,
   * network_error_code, done date, as written), with the part's carrier id, in the order applied.
   */
  partReceipts?: PartReceiptDoc[];
  /** The carrier's refusal, recorded with SEND_ERROR. */
  sendError?: string;
  /**
   * The refund that withdrew it (SEND_ERROR before submission, its recipient opted out) or
   * canceled it (CANCELED): the `ref` of the account's pending refund that gives its credit back
   * (opt-outs/withdrawals.ts refundUnsent).
   */
  withdrawal?: number;
  /**
   * Set with a final status that may leave parts no carrier accepted (SEND_ERROR from a carrier,
   * Expired while ACCEPTED): money/refunds.ts refunds them and replaces it with `refund`.
   */
  refundDue?: true;
  /** The account's pending refund that gave back its unsent parts (money/refunds.ts). */
  refund?: number;
  /** Flagged by the toll-fraud guard in `monitor` mode (money/toll-fraud-guard.ts). */
  risk?: "prefix_burst";
  /** An automatic answer to an opt-out word: not charged, sent even to an opted-out number. */
  keywordReply?: "STOP" | "START" | "HELP";
  /**
   * The trace context of the request that accepted the message, when tracing is on: its
   * submissions and webhook attempts are spans of that trace (src/tracing/work-spans.ts).
   */
  traceContext?: StoredTrace;
}

/**
 * What a message keeps of the trace that accepted it (src/tracing/tracing.ts): 25 bytes (trace
 * flags, trace id, span id), or the W3C headers when the trace carries a `tracestate`.
 */
export type StoredTrace = Binary | { traceparent: string; tracestate?: string };

export interface PartReceiptDoc {
  carrierId: string;
  stat: string;
  err: string;
  networkErrorCode?: string;
  doneTime: string;
}

export interface Lease {
  owner: string;
  until: Date;
}

export interface StoredRoute {
  name: string;
  /** The carriers to try, in order: the first healthy one takes the message. */
  carriers: readonly string[];
  /**
   * Carriers that refused it for a fault of their own (ESME_RSYSERR) before any part was
   * accepted, in order: each is taken out of `carriers`, so the next one takes the message.
   */
  refusedBy?: readonly string[];
}

export interface BatchDoc {
  _id: number;
  accountId: string;
  name: string;
  totalCount: number;
  acceptedCount: number;
  rejectedCount: number;
  /** Progress counters are not stored: GetBatch derives them from the messages it reads anyway. */
  createdAt: Date;
}

export interface SenderNameDoc {
  _id?: ObjectId;
  accountId: string;
  name: string;
  pending: boolean;
  reliable: boolean;
  purpose: "OTP" | "NOTIFICATION" | "MARKETING";
  ownerType: "COMPANY" | "NAME" | "WEBSITE";
  owner: string;
  exampleMsg: string;
  createdAt: Date;
}

export interface CounterDoc {
  _id: string;
  seq: number;
}

export interface StateDoc {
  _id: string;
  value: unknown;
  updatedAt: Date;
}

/** The queues that share turns by account: delivery steps, notifications and inbound webhooks. */
export type LaneQueue = "delivery" | "notify" | "inbound";

export interface LaneState {
  /** When the lane's earliest work is due; absent while the lane is idle. */
  dueAt?: Date;
  /** When a worker last took a turn on the lane; absent: never (first in line). */
  servedAt?: Date;
  /** Bumped by every mark. */
  version?: number;
}

/** One document per account, holding its lane of each queue (src/scheduling/lanes.ts). */
export interface LaneDoc {
  /** The account id. */
  _id: string;
  delivery?: LaneState;
  notify?: LaneState;
  inbound?: LaneState;
}
