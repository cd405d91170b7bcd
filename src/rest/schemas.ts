// JSON Schemas of the REST API. Routes validate with them, responses are serialized with them,
// and /openapi.json is generated from them, so the three cannot drift apart.

const credentials = {
  apiKey: { type: "string", minLength: 1, description: "Account API key" },
  apiSecret: { type: "string", minLength: 1, description: "Account API secret" },
} as const;

const phoneNumber = {
  type: "string",
  description: "[+][country code][number]: an optional +, then 8 to 15 digits, the first not 0",
  examples: ["+4915112345678"],
} as const;

const senderField = {
  type: "string",
  description:
    "The service's shared sender literal or an approved sender name of the account. Default: the account's default sender name, else the shared sender literal",
} as const;

const statusCallback = {
  type: "string",
  description: "Absolute http(s) URL; overrides the account's status URL for these messages",
} as const;

const messageStatus = {
  type: "string",
  enum: ["ACCEPTED", "SENT", "DELIVERED", "SEND_ERROR", "DELIVERY_ERROR"],
} as const;

const fieldErrorsResponse = {
  description:
    "Request error: messages grouped by parameter (`request` when the whole request is at fault)",
  type: "object",
  required: ["errors"],
  properties: {
    errors: {
      type: "object",
      additionalProperties: { type: "array", items: { type: "string" } },
    },
  },
  examples: [{ errors: { to: ["to cannot be empty"] } }],
} as const;

const batchErrorsResponse = {
  description:
    "Request error on POST /sms-batch: one message string per parameter (`request` when the whole request is at fault)",
  type: "object",
  required: ["errors"],
  properties: {
    errors: { type: "object", additionalProperties: { type: "string" } },
  },
  examples: [{ errors: { messages: "messages cannot be empty" } }],
} as const;

type ErrorShape = typeof fieldErrorsResponse | typeof batchErrorsResponse;

const ERROR_DESCRIPTIONS = {
  400: "The request cannot be parsed (`request`), or a parameter is missing, empty or invalid",
  401: "apiKey and apiSecret do not match an account (`request`)",
  402: "Not enough credit (`request`); nothing was stored or charged",
  404: "No such resource on this account",
  413: "The body is larger than the endpoint's limit (`request`)",
} as const;

/** The error responses an endpoint can give, all in the same shape. */
function errorResponses(shape: ErrorShape, statuses: (keyof typeof ERROR_DESCRIPTIONS)[]) {
  return Object.fromEntries(
    statuses.map((status) => [status, { ...shape, description: ERROR_DESCRIPTIONS[status] }]),
  );
}

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
        type: "integer",
        minimum: 1,
        maximum: 21600,
        default: 21600,
        description: "Seconds to try delivery for; 1 to 21600",
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
    ...errorResponses(fieldErrorsResponse, [400, 401, 402, 413]),
  },
} as const;

export const sendBatchSchema = {
  summary: "Send a batch of up to 10000 messages",
  description:
    "JSON body only; apiKey and apiSecret are body parameters. Invalid messages are rejected by their 0-based index while the others are accepted (HTTP 200, `errors` lists them). The whole batch is charged at once: without enough credit for every accepted part nothing is stored. Error values on this endpoint are strings, not arrays.",
  tags: ["batches"],
  consumes: ["application/json"],
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
            to: { ...phoneNumber, description: `Required. ${phoneNumber.description}` },
            from: { ...senderField, description: "Overrides the batch's from" },
            text: { type: "string", description: "Required. UTF-8; split as on POST /sms" },
          },
        },
      },
      from: senderField,
      statusCallback,
      name: { type: "string", maxLength: 20, description: "At most 20 characters" },
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
    ...errorResponses(batchErrorsResponse, [400, 401, 402, 413]),
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
    ...errorResponses(fieldErrorsResponse, [400, 401, 404]),
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
      owner: { type: "string", minLength: 1 },
      exampleMsg: { type: "string", minLength: 1 },
      ...credentials,
    },
  },
  response: {
    200: { ...senderName, description: "The requested sender name, pending approval" },
    ...errorResponses(fieldErrorsResponse, [400, 401, 413]),
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
    ...errorResponses(fieldErrorsResponse, [400, 401]),
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
    ...errorResponses(fieldErrorsResponse, [400, 401, 404]),
  },
} as const;
