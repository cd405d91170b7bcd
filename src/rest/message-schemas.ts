// JSON Schemas of the REST API's message operations. Routes validate with them, responses are
// serialized with them, and /openapi.json is generated from them, so the three cannot drift apart.

import { URL_MAX_CHARS } from "../domain/limits.ts";
import {
  ALWAYS,
  authQuery,
  credentials,
  errorResponses,
  idempotencyHeaders,
} from "./common-schemas.ts";
import { pageResponse, pageTokenParameter } from "./paging.ts";

/** What both batch answers start with: the batch and how its messages were taken. */
const BATCH_IDENTITY = ["id", "name", "totalCount", "acceptedCount", "rejectedCount"] as const;
const batchIdentity = {
  id: { type: "integer" },
  name: { type: "string" },
  totalCount: { type: "integer" },
  acceptedCount: { type: "integer" },
  rejectedCount: { type: "integer" },
} as const;

const phoneNumber = {
  type: "string",
  description: "[+][country code][number]: an optional +, then 8 to 15 digits, the first not 0",
  examples: ["+4915112345678"],
} as const;

// Optional parameters may be sent as null, which is the same as leaving them out.
const senderField = {
  type: ["string", "null"],
  description:
    "The service's shared sender literal, an approved sender name of the account or a number assigned to it. Default: the account's default sender name, else the shared sender literal. null or empty: the default",
} as const;

const statusCallback = {
  type: ["string", "null"],
  maxLength: URL_MAX_CHARS,
  description: `Absolute http(s) URL without user:password, at most ${URL_MAX_CHARS} characters; overrides the account's status URL for these messages. null or empty: the account's`,
} as const;

const messageStatus = {
  type: "string",
  enum: ["ACCEPTED", "SENT", "DELIVERED", "SEND_ERROR", "DELIVERY_ERROR"],
} as const;

const statusWithCanceled = {
  type: "string",
  enum: [...messageStatus.enum, "CANCELED"],
  description:
    "The spec's five statuses, and CANCELED for a message its account canceled before it was sent",
} as const;

const clientRefField = {
  type: ["string", "null"],
  description:
    "Your own reference for the message, 1 to 128 characters without control characters (null or empty: none): returned by every read, filterable on GET /sms, and carried by every status webhook as `client_ref`. Neither unique nor an idempotency key",
} as const;

const sendAtField = {
  type: ["string", "null"],
  description:
    "RFC 3339 time with offset (e.g. 2026-12-01T09:00:00+01:00): the message is accepted and charged now and handed to a carrier no earlier than this, at most 180 days ahead; up to 60 s in the past counts as now. Its ttl counts from it",
} as const;

const ignoreQuietHoursField = {
  type: ["boolean", "string", "null"],
  enum: [true, false, "true", "false", null],
  description:
    "true: send even within the account's quiet hours (PATCH /account/quiet-hours); in a form, true or false",
} as const;

const segmentsField = {
  description: "Present only when the text was split; one entry per part",
  type: "array",
  items: {
    type: "object",
    required: ["id", "text"],
    properties: { id: { type: "integer" }, text: { type: "string" } },
  },
} as const;

const reasonField = {
  type: "string",
  enum: ["Undelivered", "Unreachable", "Expired", "SIM card full", "Unroutable"],
  description: "Why it was not delivered; DELIVERY_ERROR only",
} as const;

export const sendMessageSchema = {
  summary: "Send one message",
  description:
    "Form or JSON body; apiKey and apiSecret are body parameters. The account is charged per part before the message is stored; a request that fails stores and charges nothing. A recipient on the account's opt-out list (it sent STOP, or the account listed it) is refused with 400 and `errors.to`. Unknown parameters are ignored; a null or empty optional parameter is the same as an absent one.",
  tags: ["messages"],
  consumes: ["application/x-www-form-urlencoded", "application/json"],
  headers: idempotencyHeaders,
  body: {
    type: "object",
    required: ["to", "text", "apiKey", "apiSecret"],
    properties: {
      to: { ...phoneNumber, minLength: 1 },
      from: senderField,
      text: {
        type: "string",
        minLength: 1,
        description:
          "UTF-8. Text of ISO-Latin-1 characters only: one part up to 160 characters, else parts of at most 153. Any other text: one part up to 70 UTF-16 code units, else parts of at most 67 (a surrogate pair is never split). At most 10 parts (the service's configured limit). Each part is charged.",
      },
      ttl: {
        type: ["integer", "null"],
        minimum: 1,
        maximum: 21600,
        default: 21600,
        description: "Seconds to try delivery for; 1 to 21600 (in a form, decimal digits)",
      },
      statusCallback,
      clientRef: clientRefField,
      sendAt: sendAtField,
      ignoreQuietHours: ignoreQuietHoursField,
      ...credentials,
    },
  },
  response: {
    200: {
      description: "The accepted message",
      type: "object",
      required: ["id", "to", "from", "text", "status", "creditRemaining"],
      properties: {
        id: { type: "integer" },
        to: { type: "string" },
        from: { type: "string" },
        text: { type: "string" },
        status: messageStatus,
        segments: {
          description: "Present only when the text was split; one entry per part",
          type: "array",
          items: {
            type: "object",
            required: ["id", "text"],
            properties: { id: { type: "integer" }, text: { type: "string" } },
          },
        },
        creditRemaining: {
          type: "number",
          description: "Account credit left after this message, in account currency",
        },
        clientRef: { type: "string", description: "As given; absent when none was" },
        sendAt: {
          type: "string",
          format: "date-time",
          description: "When it will be handed to a carrier; absent when it goes at once",
        },
      },
    },
    ...errorResponses("arrays", [...ALWAYS, 402, 409, 413, 422]),
  },
} as const;

export const sendBatchSchema = {
  summary: "Send a batch of up to 10000 messages",
  description:
    "JSON body only; apiKey and apiSecret are body parameters. Invalid messages, and messages to recipients on the account's opt-out list, are rejected by their 0-based index while the others are accepted (HTTP 200, `errors` lists them). The whole batch is charged at once: without enough credit for every accepted part nothing is stored. Error values on this endpoint are strings, not arrays.",
  tags: ["batches"],
  consumes: ["application/json"],
  headers: idempotencyHeaders,
  body: {
    type: "object",
    required: ["messages", "apiKey", "apiSecret"],
    properties: {
      messages: {
        type: "array",
        minItems: 1,
        maxItems: 10000,
        items: {
          type: "object",
          // to and text are not required here: a message without them is rejected on its own,
          // by index, while the rest of the batch is accepted.
          properties: {
            to: {
              ...phoneNumber,
              type: ["string", "null"],
              description: `Required. ${phoneNumber.description}`,
            },
            from: { ...senderField, description: "Overrides the batch's from" },
            text: {
              type: ["string", "null"],
              description: "Required. UTF-8; split as on POST /sms",
            },
            clientRef: { ...clientRefField, description: "Overrides the batch's clientRef" },
          },
        },
      },
      from: senderField,
      statusCallback,
      name: {
        type: ["string", "null"],
        maxLength: 20,
        description: "At most 20 characters; null or empty: no name",
      },
      clientRef: { ...clientRefField, description: "The clientRef of every message naming none" },
      sendAt: {
        ...sendAtField,
        description: "When every message of the batch is to go; see POST /sms",
      },
      ignoreQuietHours: {
        type: ["boolean", "null"],
        description: "true: send every message even within the account's quiet hours",
      },
      ...credentials,
    },
  },
  response: {
    200: {
      description: "The stored batch; invalid messages are listed in errors by 0-based index",
      type: "object",
      required: [...BATCH_IDENTITY],
      properties: {
        ...batchIdentity,
        errors: {
          type: "array",
          items: {
            type: "object",
            required: ["index", "text"],
            properties: { index: { type: "integer" }, text: { type: "string" } },
          },
        },
      },
    },
    ...errorResponses("strings", [...ALWAYS, 402, 409, 413, 422]),
  },
} as const;

export const getBatchSchema = {
  summary: "Batch information",
  description:
    "apiKey and apiSecret are query parameters. A batch of another account is answered like an unknown one (404).",
  tags: ["batches"],
  params: {
    type: "object",
    required: ["id"],
    properties: { id: { type: "string", pattern: "^[1-9][0-9]{0,15}$", description: "Batch id" } },
  },
  querystring: authQuery,
  response: {
    200: {
      description: "Counters and the accepted messages of the batch",
      type: "object",
      required: [
        ...BATCH_IDENTITY,
        "sentCount",
        "deliveredCount",
        "undeliveredCount",
        "messages",
        "isActive",
      ],
      properties: {
        ...batchIdentity,
        sentCount: { type: "integer" },
        deliveredCount: { type: "integer" },
        undeliveredCount: {
          type: "integer",
          description: "DELIVERY_ERROR and SEND_ERROR, and CANCELED",
        },
        canceledCount: { type: "integer", description: "Messages CANCELED" },
        messages: {
          type: "array",
          items: {
            type: "object",
            required: ["id", "from", "to", "status"],
            properties: {
              id: { type: "integer" },
              from: { type: "string" },
              to: { type: "string" },
              status: { ...messageStatus, enum: [...messageStatus.enum, "CANCELED"] },
            },
          },
        },
        isActive: {
          type: "boolean",
          description: "true until every message is delivered or undelivered",
        },
      },
    },
    ...errorResponses("arrays", [...ALWAYS, 404]),
  },
} as const;

/** A message as GET /sms lists it; GET /sms/{id} adds statusHistory and carrierStatus. */
const messageRead = {
  type: "object",
  required: ["id", "to", "from", "text", "status", "parts", "price", "createTime"],
  properties: {
    id: { type: "integer" },
    to: { type: "string" },
    from: { type: "string" },
    text: { type: "string" },
    status: statusWithCanceled,
    reason: reasonField,
    parts: { type: "integer", description: "Parts it was split into and charged for" },
    segments: segmentsField,
    batchId: { type: "integer", description: "The batch it was sent in" },
    clientRef: { type: "string" },
    price: {
      type: "number",
      description: "What it was charged, in account currency (refunds are not subtracted)",
    },
    createTime: { type: "string", format: "date-time", description: "When it was accepted" },
    sendAt: {
      type: "string",
      format: "date-time",
      description: "When it was scheduled to go; absent when sent at once",
    },
    holdUntil: {
      type: "string",
      format: "date-time",
      description:
        "Held by the account's quiet hours in the recipient's time zone until this; its ttl counts from it",
    },
  },
} as const;

const idParam = (what: string) =>
  ({
    type: "object",
    required: ["id"],
    properties: { id: { type: "string", pattern: "^[1-9][0-9]{0,15}$", description: what } },
  }) as const;

export const getMessageSchema = {
  summary: "Read a message",
  description:
    "apiKey and apiSecret are query parameters. Its status with the reason, its parts, its client reference, its price and every status it took with its time. A message of another account is answered like an unknown one (404).",
  tags: ["messages"],
  params: idParam("Message id (not a part's)"),
  querystring: authQuery,
  response: {
    200: {
      ...messageRead,
      description: "The message",
      required: [...messageRead.required, "statusHistory"],
      properties: {
        ...messageRead.properties,
        statusHistory: {
          type: "array",
          description: "Every status it took, oldest first, ACCEPTED included",
          items: {
            type: "object",
            required: ["status", "time"],
            properties: {
              status: statusWithCanceled,
              time: { type: "string", format: "date-time" },
              reason: reasonField,
            },
          },
        },
        carrierStatus: {
          type: "object",
          description:
            "What the carrier said in its receipt, as written (SMPP); absent before any receipt and for the simulator",
          required: ["stat", "err", "doneTime"],
          properties: {
            stat: { type: "string" },
            err: { type: "string" },
            networkErrorCode: { type: "string" },
            doneTime: { type: "string" },
          },
        },
      },
    },
    ...errorResponses("arrays", [...ALWAYS, 404], { 404: { id: ["no message with id 42"] } }),
  },
} as const;

export const listMessagesSchema = {
  summary: "List messages",
  description:
    "The account's messages, newest first (by acceptance time, then id), without statusHistory and carrierStatus. apiKey and apiSecret are query parameters; filters combine with AND. Paged: pass nextPageToken as pageToken, with the same filters, for the next page.",
  tags: ["messages"],
  querystring: {
    type: "object",
    required: ["apiKey", "apiSecret"],
    properties: {
      ...credentials,
      to: { type: "string", description: "Only messages to this number, as submitted" },
      status: statusWithCanceled,
      batchId: { type: "string", pattern: "^[1-9][0-9]{0,15}$", description: "Only this batch's" },
      clientRef: { type: "string", description: "Only messages with this client reference" },
      since: {
        type: "string",
        format: "date-time",
        description: "Only messages accepted at or after this time (RFC 3339)",
      },
      until: {
        type: "string",
        format: "date-time",
        description: "Only messages accepted before this time (RFC 3339)",
      },
      pageSize: {
        type: "string",
        pattern: "^([1-9][0-9]{0,2}|1000)$",
        description: "At most this many messages, 1 to 1000; default 100",
      },
      pageToken: pageTokenParameter(
        "nextPageToken of the previous page, with the same filters; absent for the first",
      ),
    },
  },
  response: {
    200: pageResponse("A page of messages", "messages", messageRead),
    ...errorResponses("arrays", ALWAYS),
  },
} as const;

export const cancelMessageSchema = {
  summary: "Cancel a message",
  description:
    "apiKey and apiSecret in the body (form or JSON). A message that no carrier has taken and no delivery worker has claimed (scheduled, queued or held) becomes CANCELED, its price is refunded and its status webhook sent. Canceling a CANCELED message again answers 200. Once handed over or claimed: 409 with errors.id.",
  tags: ["messages"],
  consumes: ["application/x-www-form-urlencoded", "application/json"],
  params: idParam("Message id (not a part's)"),
  body: { type: "object", required: ["apiKey", "apiSecret"], properties: credentials },
  response: {
    200: { ...messageRead, description: "The message, CANCELED" },
    ...errorResponses("arrays", [...ALWAYS, 404, 409], {
      409: { id: ["message 42 was already handed to a carrier or claimed by a delivery worker"] },
    }),
  },
} as const;

export const cancelBatchSchema = {
  summary: "Cancel a batch's unsent messages",
  description:
    "apiKey and apiSecret in the body (form or JSON). Every message of the batch that POST /sms/{id}/cancel would cancel is CANCELED and refunded (one refund); the others are left as they are. Repeating it answers the same counts.",
  tags: ["batches"],
  consumes: ["application/x-www-form-urlencoded", "application/json"],
  params: idParam("Batch id"),
  body: { type: "object", required: ["apiKey", "apiSecret"], properties: credentials },
  response: {
    200: {
      description: "How many of the batch's messages are CANCELED, and how many are not",
      type: "object",
      required: ["id", "canceledCount", "notCanceledCount"],
      properties: {
        id: { type: "integer" },
        canceledCount: { type: "integer" },
        notCanceledCount: { type: "integer" },
      },
    },
    ...errorResponses("arrays", [...ALWAYS, 404]),
  },
} as const;
