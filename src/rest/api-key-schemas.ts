// JSON Schemas of the API keys and the webhook secret (see message-schemas.ts for why schemas).

import { KEY_NAME_MAX_CHARS } from "../accounts/api-keys.ts";
import { SCOPES } from "../accounts/scopes.ts";
import { ALWAYS, authQuery, credentials, errorResponses } from "./common-schemas.ts";

const apiKey = {
  type: "object",
  required: ["apiKey", "name", "scope", "createTime"],
  properties: {
    apiKey: { type: "string" },
    name: { type: "string" },
    scope: { type: "string", enum: SCOPES },
    createTime: { type: "string", format: "date-time" },
    lastUseTime: {
      type: "string",
      format: "date-time",
      description: "When the key was last used, to the minute; absent when never",
    },
    expireTime: { type: "string", format: "date-time", description: "Absent: never expires" },
  },
} as const;

const FULL_ONLY = "Needs a key of scope `full`.";

export const createApiKeySchema = {
  summary: "Make an API key",
  description: `${FULL_ONLY} The secret is in this answer only (\`Cache-Control: no-store\`); only a digest is kept. At most 20 keys per account, expired ones not counted (they stay listed). Takes no Idempotency-Key. Refused (403) while the account is suspended.`,
  tags: ["API keys"],
  consumes: ["application/x-www-form-urlencoded", "application/json"],
  body: {
    type: "object",
    required: ["name", "apiKey", "apiSecret"],
    properties: {
      name: { type: "string", minLength: 1, maxLength: KEY_NAME_MAX_CHARS },
      scope: {
        type: "string",
        enum: SCOPES,
        default: "full",
        description:
          "full: everything; send: sends, quotes, cancels, adding opt-outs and every read; read: every read",
      },
      expireTime: {
        type: "string",
        minLength: 1,
        maxLength: 64,
        description: "RFC 3339 time in the future; absent: never",
      },
      ...credentials,
    },
  },
  response: {
    200: {
      ...apiKey,
      required: [...apiKey.required, "apiSecret"],
      properties: { ...apiKey.properties, apiSecret: { type: "string" } },
      description: "The new key and its secret, shown this once",
    },
    ...errorResponses("arrays", [...ALWAYS, 403, 409]),
  },
} as const;

export const listApiKeysSchema = {
  summary: "List API keys",
  description: `${FULL_ONLY} apiKey and apiSecret are query parameters. Never a secret.`,
  tags: ["API keys"],
  querystring: authQuery,
  response: {
    200: {
      description: "The account's keys not revoked, oldest first",
      type: "object",
      required: ["apiKeys"],
      properties: { apiKeys: { type: "array", items: apiKey } },
    },
    ...errorResponses("arrays", [...ALWAYS, 403]),
  },
} as const;

export const deleteApiKeySchema = {
  summary: "Revoke an API key",
  description: `${FULL_ONLY} apiKey and apiSecret (of the key making the request) are query parameters. Every instance refuses the revoked key within 5 s. Not the key the request is made with, nor the account's last full key (409).`,
  tags: ["API keys"],
  params: {
    type: "object",
    required: ["key"],
    properties: { key: { type: "string", minLength: 1, maxLength: 64 } },
  },
  querystring: authQuery,
  response: {
    200: { ...apiKey, description: "The revoked key" },
    ...errorResponses("arrays", [...ALWAYS, 403, 404, 409], {
      404: { apiKey: ["no API key 0a1b2c on this account"] },
      409: {
        apiKey: ["the account's last full key cannot be deleted: make another full key first"],
      },
    }),
  },
} as const;

export const rotateWebhookSecretSchema = {
  summary: "Rotate the webhook secret",
  description: `${FULL_ONLY} Webhooks carry two signatures, the new secret's and the previous one's, for SMS_WEBHOOK_SECRET_OVERLAP (default 24 h), then the new one's only.`,
  tags: ["API keys"],
  consumes: ["application/x-www-form-urlencoded", "application/json"],
  body: { type: "object", required: ["apiKey", "apiSecret"], properties: credentials },
  response: {
    200: {
      description: "The new secret",
      type: "object",
      required: ["webhookSecret"],
      properties: { webhookSecret: { type: "string" } },
    },
    ...errorResponses("arrays", [...ALWAYS, 403]),
  },
} as const;
