// JSON Schemas of the sender-name operations (see message-schemas.ts for why schemas).

import { SENDER_EXAMPLE_MAX_CHARS, SENDER_OWNER_MAX_CHARS } from "../domain/limits.ts";
import {
  ALWAYS,
  authQuery,
  credentials,
  errorResponses,
  idempotencyHeaders,
} from "./common-schemas.ts";

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
