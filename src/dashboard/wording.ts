import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  type MessageStatus,
  type NonDeliveryReason,
  NotificationState,
  OptOutSource,
  OptOutType,
  SenderNameOwnerType,
  SenderNamePurpose,
  type WebhookAttempt,
} from "../../gen/sms/v1/types_pb.ts";
import type { ReasonName, StatusName } from "../domain/message-status.ts";
import type { OptOutType as OptOutTypeName } from "../domain/opt-out-type.ts";
import { reasonNameOf, statusNameOf } from "../domain/status-codes.ts";

// How the dashboard words what the services answer: statuses and non-delivery reasons in the
// spec's words (its tables "Message status values" and "Reasons for non-delivery"), times in UTC,
// money in account currency.

export const STATUS_MEANINGS: Record<StatusName, string> = {
  ACCEPTED: "The message is valid and will be sent",
  SENT: "The message has been sent; waiting for the delivery receipt",
  DELIVERED: "The message has been delivered",
  SEND_ERROR: "An error occurred while sending",
  DELIVERY_ERROR: "The message was sent but cannot reach the receiver",
  CANCELED: "The message was canceled before it was sent; its price was refunded",
};

export const REASON_MEANINGS: Record<ReasonName, string> = {
  Undelivered: "General error with no further information",
  Unreachable: "Handset out of range, off, dead battery or otherwise not contactable",
  Expired: "The message could not be routed through the network within the time limit",
  "SIM card full": "The handset's SIM card is full",
  Unroutable:
    "No route to the network found (usually the controlling network of the number cannot be determined)",
};

const NOTIFICATION_STATES: Record<NotificationState, string> = {
  [NotificationState.UNSPECIFIED]: "",
  [NotificationState.PENDING]: "pending",
  [NotificationState.DELIVERED]: "delivered",
  [NotificationState.GAVE_UP]: "gave up",
  [NotificationState.SKIPPED]: "skipped (no status URL)",
};

/** What an opt-out word in an inbound message did (docs/design.md "Two-way messaging"). */
export const OPT_OUT_MEANINGS: Record<OptOutTypeName, string> = {
  STOP: "opted the sender out of this account's messages, until it sends START",
  START: "lifted the sender's opt-out",
  HELP: "asked for help, answered with the HELP reply (at most once in 5 minutes)",
};

const OPT_OUT_TYPE_NAMES: Partial<Record<OptOutType, OptOutTypeName>> = {
  [OptOutType.STOP]: "STOP",
  [OptOutType.START]: "START",
  [OptOutType.HELP]: "HELP",
};

/** STOP, START or HELP; empty for an ordinary answer. */
export const optOutTypeName = (type: OptOutType): OptOutTypeName | "" =>
  OPT_OUT_TYPE_NAMES[type] ?? "";

/** Who put a number on the opt-out list, as the account reads it. */
const OPT_OUT_SOURCES: Record<OptOutSource, string> = {
  [OptOutSource.UNSPECIFIED]: "",
  [OptOutSource.KEYWORD]: "the handset",
  [OptOutSource.API]: "this account",
  [OptOutSource.OPERATOR]: "the operator",
};

export const optOutSourceText = (source: OptOutSource): string => OPT_OUT_SOURCES[source] ?? "";

export const statusName = (status: MessageStatus): string => statusNameOf(status) ?? "";

export function reasonOf(reason: NonDeliveryReason): { name: string; meaning: string } | undefined {
  const name = reasonNameOf(reason);
  return name ? { name, meaning: REASON_MEANINGS[name] } : undefined;
}

export const notificationState = (state: NotificationState): string =>
  NOTIFICATION_STATES[state] ?? "";

/** A webhook's attempts as the pages show them (views/webhook-attempts.eta). */
export const attemptRows = (attempts: readonly WebhookAttempt[]) =>
  attempts.map((a) => ({
    at: timeText(a.attemptTime),
    httpStatus: a.httpStatus === 0 ? "no answer" : String(a.httpStatus),
    error: a.error,
    durationMs: a.durationMs,
  }));

export const purposeName = (purpose: SenderNamePurpose): string => SenderNamePurpose[purpose] ?? "";

export const ownerTypeName = (ownerType: SenderNameOwnerType): string =>
  SenderNameOwnerType[ownerType] ?? "";

/** `2026-11-23 19:30:01 UTC`; empty for no time. */
export function timeText(time: Timestamp | Date | undefined): string {
  if (!time) return "";
  const date = time instanceof Date ? time : timestampDate(time);
  return `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** Micro-units as the account currency, without trailing zeros: 999.5, 1000. */
export function creditText(micros: number | bigint): string {
  const value = BigInt(micros);
  const sign = value < 0n ? "-" : "";
  const abs = value < 0n ? -value : value;
  const fraction = (abs % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return `${sign}${abs / 1_000_000n}${fraction ? `.${fraction}` : ""}`;
}

/**
 * What a message cost, parts times its price per part, in the credit's units; empty for messages
 * accepted before prices by destination, which kept no price.
 */
export function priceText(parts: number, pricePerPartMicros: bigint | undefined): string {
  return pricePerPartMicros === undefined ? "" : creditText(BigInt(parts) * pricePerPartMicros);
}
