// JSON Schemas of the REST API's message operations. Routes validate with them, responses are
// serialized with them, and /openapi.json is generated from them, so the three cannot drift apart.

import {
  ALWAYS,
  authQuery,
  credentials,
  errorResponses,
  idempotencyHeaders,
} from "./common-schemas.ts";
import {
  BATCH_IDENTITY,
  batchIdentity,
  clientRefField,
  ignoreQuietHoursField,
  messageStatus,
  phoneNumber,
  sendAtField,
  senderField,
  statusCallback,
} from "./message-fields.ts";

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
