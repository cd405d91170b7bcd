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
        undeliveredCount: { type: "integer" },
        messages: {
          type: "array",
          items: {
            type: "object",
            required: ["id", "from", "to", "status"],
            properties: {
              id: { type: "integer" },
              from: { type: "string" },
              to: { type: "string" },
              status: messageStatus,
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
