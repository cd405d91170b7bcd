// JSON Schemas of the REST API. Routes validate with them, responses are serialized with them,
// and /openapi.json is generated from them, so the three cannot drift apart.

import {
  SENDER_EXAMPLE_MAX_CHARS,
  SENDER_OWNER_MAX_CHARS,
  URL_MAX_CHARS,
} from "../domain/limits.ts";

const credentials = {
  apiKey: { type: "string", minLength: 1, description: "Account API key" },
  apiSecret: { type: "string", minLength: 1, description: "Account API secret" },
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
    "The service's shared sender literal or an approved sender name of the account. Default: the account's default sender name, else the shared sender literal. null or empty: the default",
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

/** `Idempotency-Key` (design "Idempotency and rate limits"), on the operations that create. */
const idempotencyHeaders = {
  type: "object",
  properties: {
    "idempotency-key": {
      type: "string",
      pattern: "^[!-~]{1,255}$",
      description:
        "1 to 255 visible ASCII characters. The same key from the same account within 24 h replays the first answer (with `Idempotent-Replayed: true`), storing and charging nothing again; 409 while the first is still running, 422 with a different body",
    },
  },
} as const;

const arrayErrors = { type: "array", items: { type: "string" } } as const;

/** `{errors: {param: [msg]}}`, with an example for the status it documents. */
const fieldErrorsResponse = (description: string, example: Record<string, readonly string[]>) =>
  ({
    description,
    type: "object",
    required: ["errors"],
    properties: { errors: { type: "object", additionalProperties: arrayErrors } },
    examples: [{ errors: example }],
  }) as const;

/**
 * POST /sms-batch: `{errors: {param: msg}}` for parameters and the service's refusals; a request
 * that cannot be read (parse failure, size) is `{errors: {request: [msg]}}` like everywhere.
 */
const batchErrorsResponse = (
  description: string,
  example: Record<string, string | readonly string[]>,
) =>
  ({
    description,
    type: "object",
    required: ["errors"],
    properties: {
      errors: {
        type: "object",
        additionalProperties: { anyOf: [{ type: "string" }, arrayErrors] },
      },
    },
    examples: [{ errors: example }],
  }) as const;

type Shape = "arrays" | "strings";

const ERRORS = {
  400: {
    description:
      "The request cannot be parsed (`request`, always an array), or a parameter is missing, empty or invalid",
    arrays: { to: ["to cannot be empty"] },
    strings: { messages: "messages cannot be empty" },
  },
  401: {
    description: "apiKey and apiSecret do not match an account (`request`)",
    arrays: { request: ["apiKey and apiSecret do not match an account"] },
    strings: { request: "apiKey and apiSecret do not match an account" },
  },
  402: {
    description: "Not enough credit (`request`); nothing was stored or charged",
    arrays: { request: ["not enough credit: this request costs 2; the account has 1"] },
    strings: { request: "not enough credit: this request costs 2; the account has 1" },
  },
  404: {
    description: "No such resource on this account",
    arrays: { id: ["no batch with id 42"] },
    strings: { id: "no batch with id 42" },
  },
  409: {
    description:
      "A request with this Idempotency-Key is still running (`request`); retry after it answered",
    arrays: { request: ["a request with this Idempotency-Key is still running"] },
    strings: { request: "a request with this Idempotency-Key is still running" },
  },
  413: {
    description: "The body is larger than the endpoint's limit (`request`, always an array)",
    arrays: { request: ["the body is larger than the limit of 1048576 bytes for POST /sms"] },
    strings: {
      request: ["the body is larger than the limit of 100663296 bytes for POST /sms-batch"],
    },
  },
  422: {
    description: "This Idempotency-Key was used with a different request (`request`)",
    arrays: { request: ["this Idempotency-Key was used with a different request"] },
    strings: { request: "this Idempotency-Key was used with a different request" },
  },
  429: {
    description:
      "Too many requests for the account, or too many failed authentications from the address (`request`); see Retry-After",
    arrays: {
      request: ["too many requests for this account: at most 100 a second; retry after 1 s"],
    },
    strings: {
      request: "too many requests for this account: at most 100 a second; retry after 1 s",
    },
  },
  503: {
    description:
      "The service cannot reach its database, or is shutting down (`request`); see Retry-After",
    arrays: { request: ["the service is unavailable; retry later"] },
    strings: { request: "the service is unavailable; retry later" },
  },
} as const;

type ErrorStatus = keyof typeof ERRORS;

/** The error responses an endpoint can give, each with its example. */
function errorResponses(
  shape: Shape,
  statuses: ErrorStatus[],
  examples: Partial<Record<ErrorStatus, Record<string, readonly string[]>>> = {},
) {
  return Object.fromEntries(
    statuses.map((status) => {
      const { description, arrays, strings } = ERRORS[status];
      return [
        status,
        shape === "arrays"
          ? fieldErrorsResponse(description, examples[status] ?? arrays)
          : batchErrorsResponse(description, strings),
      ];
    }),
  );
}

/** Every operation may be refused for its rate or while the service is unavailable. */
const ALWAYS: ErrorStatus[] = [400, 401, 429, 503];

const authQuery = {
  type: "object",
  required: ["apiKey", "apiSecret"],
  properties: credentials,
} as const;

export const sendMessageSchema = {
  summary: "Send one message",
  description:
    "Form or JSON body; apiKey and apiSecret are body parameters. The account is charged per part before the message is stored; a request that fails stores and charges nothing. Unknown parameters are ignored; a null or empty optional parameter is the same as an absent one.",
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
    "JSON body only; apiKey and apiSecret are body parameters. Invalid messages are rejected by their 0-based index while the others are accepted (HTTP 200, `errors` lists them). The whole batch is charged at once: without enough credit for every accepted part nothing is stored. Error values on this endpoint are strings, not arrays.",
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
      required: ["id", "name", "totalCount", "acceptedCount", "rejectedCount"],
      properties: {
        id: { type: "integer" },
        name: { type: "string" },
        totalCount: { type: "integer" },
        acceptedCount: { type: "integer" },
        rejectedCount: { type: "integer" },
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
        "id",
        "name",
        "totalCount",
        "acceptedCount",
        "rejectedCount",
        "sentCount",
        "deliveredCount",
        "undeliveredCount",
        "messages",
        "isActive",
      ],
      properties: {
        id: { type: "integer" },
        name: { type: "string" },
        totalCount: { type: "integer" },
        acceptedCount: { type: "integer" },
        rejectedCount: { type: "integer" },
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

const senderName = {
  type: "object",
  required: ["name", "pending", "reliable", "default"],
  properties: {
    name: { type: "string" },
    pending: { type: "boolean", description: "true while awaiting approval" },
    reliable: {
      type: "boolean",
      description: "Messages from an unreliable sender name are more often blocked as spam",
    },
    default: { type: "boolean", description: "Whether it is the account's default sender name" },
  },
} as const;

export const createSenderNameSchema = {
  summary: "Request a sender name",
  description:
    "The new name is pending until the operator approves it (then pending is false) or rejects it (then it is removed). Only approved names may be used as `from`.",
  tags: ["sender names"],
  consumes: ["application/x-www-form-urlencoded", "application/json"],
  headers: idempotencyHeaders,
  body: {
    type: "object",
    required: ["name", "purpose", "ownerType", "owner", "exampleMsg", "apiKey", "apiSecret"],
    properties: {
      name: {
        type: "string",
        minLength: 1,
        maxLength: 11,
        pattern: "^[A-Za-z0-9]*$",
        description: "At most 11 characters, letters and digits only",
      },
      purpose: { type: "string", enum: ["OTP", "NOTIFICATION", "MARKETING"] },
      ownerType: { type: "string", enum: ["COMPANY", "NAME", "WEBSITE"] },
      owner: {
        type: "string",
        minLength: 1,
        maxLength: SENDER_OWNER_MAX_CHARS,
        description: `Company name, individual name or website, as ownerType says; at most ${SENDER_OWNER_MAX_CHARS} characters`,
      },
      exampleMsg: {
        type: "string",
        minLength: 1,
        maxLength: SENDER_EXAMPLE_MAX_CHARS,
        description: `An example of the messages to be sent; at most ${SENDER_EXAMPLE_MAX_CHARS} characters`,
      },
      ...credentials,
    },
  },
  response: {
    200: { ...senderName, description: "The requested sender name, pending approval" },
    ...errorResponses("arrays", [...ALWAYS, 409, 413, 422]),
  },
} as const;

export const listSenderNamesSchema = {
  summary: "List sender names",
  description: "apiKey and apiSecret are query parameters.",
  tags: ["sender names"],
  querystring: authQuery,
  response: {
    200: {
      description: "The sender names of the account",
      type: "object",
      required: ["sender_names"],
      properties: { sender_names: { type: "array", items: senderName } },
    },
    ...errorResponses("arrays", ALWAYS),
  },
} as const;

export const deleteSenderNameSchema = {
  summary: "Delete a sender name",
  description:
    "apiKey and apiSecret are query parameters. Deleting the account's default sender name clears the default: messages without `from` then use the shared sender literal.",
  tags: ["sender names"],
  params: {
    type: "object",
    required: ["name"],
    properties: { name: { type: "string", minLength: 1 } },
  },
  querystring: authQuery,
  response: {
    200: { ...senderName, description: "The deleted sender name" },
    ...errorResponses("arrays", [...ALWAYS, 404], {
      404: { name: ["no sender name Shop on this account"] },
    }),
  },
} as const;
