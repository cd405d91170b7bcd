import { ALWAYS, authQuery, credentials, errorResponses } from "./common-schemas.ts";
import { reasonField, segmentsField, statusWithCanceled } from "./message-fields.ts";
import { pageResponse, pageTokenParameter } from "./paging.ts";

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
