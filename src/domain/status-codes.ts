/**
 * The status and reason names (message-status.ts) as the contract's enums: the one mapping every
 * door uses, REST and the dashboard reading proto answers and the services writing them.
 */
import { MessageStatus, NonDeliveryReason } from "../../gen/sms/v1/types_pb.ts";
import type { ReasonName, StatusName } from "./message-status.ts";

export const STATUS_TO_PROTO: Record<StatusName, MessageStatus> = {
  ACCEPTED: MessageStatus.ACCEPTED,
  SENT: MessageStatus.SENT,
  DELIVERED: MessageStatus.DELIVERED,
  SEND_ERROR: MessageStatus.SEND_ERROR,
  DELIVERY_ERROR: MessageStatus.DELIVERY_ERROR,
  CANCELED: MessageStatus.CANCELED,
};

export const REASON_TO_PROTO: Record<ReasonName, NonDeliveryReason> = {
  Undelivered: NonDeliveryReason.UNDELIVERED,
  Unreachable: NonDeliveryReason.UNREACHABLE,
  Expired: NonDeliveryReason.EXPIRED,
  "SIM card full": NonDeliveryReason.SIM_CARD_FULL,
  Unroutable: NonDeliveryReason.UNROUTABLE,
};

const inverse = <K extends string, V extends number>(map: Record<K, V>) =>
  new Map<V, K>((Object.entries(map) as [K, V][]).map(([name, code]) => [code, name]));

const STATUS_NAME_OF = inverse(STATUS_TO_PROTO);
const REASON_NAME_OF = inverse(REASON_TO_PROTO);

/** The name of a proto status; undefined for UNSPECIFIED. */
export const statusNameOf = (status: MessageStatus): StatusName | undefined =>
  STATUS_NAME_OF.get(status);

/** The name of a proto reason; undefined for UNSPECIFIED. */
export const reasonNameOf = (reason: NonDeliveryReason): ReasonName | undefined =>
  REASON_NAME_OF.get(reason);
