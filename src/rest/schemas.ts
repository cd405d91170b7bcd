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
  description: "The shared sender literal or an approved sender name of the account",
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
  description: "Request error: messages grouped by parameter",
  type: "object",
  properties: {
    errors: {
      type: "object",
      additionalProperties: { type: "array", items: { type: "string" } },
    },
  },
} as const;

const batchErrorsResponse = {
  description: "Request error: one message string per parameter",
  type: "object",
  properties: {
    errors: { type: "object", additionalProperties: { type: "string" } },
  },
} as const;

function errorResponses(shape: typeof fieldErrorsResponse | typeof batchErrorsResponse) {
  return {
    400: shape,
    401: { ...shape, description: "Wrong credentials" },
    402: { ...shape, description: "Not enough credit" },
    404: { ...shape, description: "Unknown resource" },
    413: { ...shape, description: "Body too large" },
    429: { ...shape, description: "Rate limited" },
  };
}

const authQuery = {
  type: "object",
  required: ["apiKey", "apiSecret"],
  properties: credentials,
} as const;

export const sendMessageSchema = {
  summary: "Send one message",
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
          "UTF-8. ISO-Latin-1 text: one part up to 160 characters, else parts of 153. Other text: 70, else parts of 67. At most 10 parts.",
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
    ...errorResponses(fieldErrorsResponse),
  },
} as const;

export const sendBatchSchema = {
  summary: "Send a batch of up to 10000 messages",
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
          properties: { to: phoneNumber, from: senderField, text: { type: "string" } },
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
    ...errorResponses(batchErrorsResponse),
  },
} as const;

export const getBatchSchema = {
  summary: "Batch information",
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
    ...errorResponses(fieldErrorsResponse),
  },
} as const;

const senderName = {
  type: "object",
  required: ["name", "pending", "reliable", "default"],
  properties: {
    name: { type: "string" },
    pending: { type: "boolean" },
    reliable: { type: "boolean" },
    default: { type: "boolean" },
  },
} as const;

export const createSenderNameSchema = {
  summary: "Request a sender name",
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
  response: { 200: { ...senderName, description: "The requested sender name" }, ...errorResponses(fieldErrorsResponse) },
} as const;

export const listSenderNamesSchema = {
  summary: "List sender names",
  tags: ["sender names"],
  querystring: authQuery,
  response: {
    200: {
      description: "The sender names of the account",
      type: "object",
      required: ["sender_names"],
      properties: { sender_names: { type: "array", items: senderName } },
    },
    ...errorResponses(fieldErrorsResponse),
  },
} as const;

export const deleteSenderNameSchema = {
  summary: "Delete a sender name",
  tags: ["sender names"],
  params: {
    type: "object",
    required: ["name"],
    properties: { name: { type: "string", minLength: 1 } },
  },
  querystring: authQuery,
  response: { 200: { ...senderName, description: "The deleted sender name" }, ...errorResponses(fieldErrorsResponse) },
} as const;
