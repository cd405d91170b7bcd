// The fields the message operations' schemas share (message-schemas.ts: sends and batches;
// message-read-schemas.ts: reads and cancels).

import { URL_MAX_CHARS } from "../domain/limits.ts";

/** What both batch answers start with: the batch and how its messages were taken. */
export const BATCH_IDENTITY = [
  "id",
  "name",
  "totalCount",
  "acceptedCount",
  "rejectedCount",
] as const;
export const batchIdentity = {
  id: { type: "integer" },
  name: { type: "string" },
  totalCount: { type: "integer" },
  acceptedCount: { type: "integer" },
  rejectedCount: { type: "integer" },
} as const;

export const phoneNumber = {
  type: "string",
  description: "[+][country code][number]: an optional +, then 8 to 15 digits, the first not 0",
  examples: ["+4915112345678"],
} as const;

// Optional parameters may be sent as null, which is the same as leaving them out.
export const senderField = {
  type: ["string", "null"],
  description:
    "The service's shared sender literal, an approved sender name of the account or a number assigned to it. Default: the account's default sender name, else the shared sender literal. null or empty: the default",
} as const;

export const statusCallback = {
  type: ["string", "null"],
  maxLength: URL_MAX_CHARS,
  description: `Absolute http(s) URL without user:password, at most ${URL_MAX_CHARS} characters; overrides the account's status URL for these messages. null or empty: the account's`,
} as const;

export const messageStatus = {
  type: "string",
  enum: ["ACCEPTED", "SENT", "DELIVERED", "SEND_ERROR", "DELIVERY_ERROR"],
} as const;

export const statusWithCanceled = {
  type: "string",
  enum: [...messageStatus.enum, "CANCELED"],
  description:
    "The spec's five statuses, and CANCELED for a message its account canceled before it was sent",
} as const;

export const clientRefField = {
  type: ["string", "null"],
  description:
    "Your own reference for the message, 1 to 128 characters without control characters (null or empty: none): returned by every read, filterable on GET /sms, and carried by every status webhook as `client_ref`. Neither unique nor an idempotency key",
} as const;

export const sendAtField = {
  type: ["string", "null"],
  description:
    "RFC 3339 time with offset (e.g. 2026-12-01T09:00:00+01:00): the message is accepted and charged now and handed to a carrier no earlier than this, at most 180 days ahead; up to 60 s in the past counts as now. Its ttl counts from it",
} as const;

export const ignoreQuietHoursField = {
  type: ["boolean", "string", "null"],
  enum: [true, false, "true", "false", null],
  description:
    "true: send even within the account's quiet hours (PATCH /account/quiet-hours); in a form, true or false",
} as const;

export const segmentsField = {
  description: "Present only when the text was split; one entry per part",
  type: "array",
  items: {
    type: "object",
    required: ["id", "text"],
    properties: { id: { type: "integer" }, text: { type: "string" } },
  },
} as const;

export const reasonField = {
  type: "string",
  enum: ["Undelivered", "Unreachable", "Expired", "SIM card full", "Unroutable"],
  description: "Why it was not delivered; DELIVERY_ERROR only",
} as const;
