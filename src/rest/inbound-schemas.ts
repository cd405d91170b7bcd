// JSON Schemas of the inbound-message operations (see message-schemas.ts for why schemas).

import { ALWAYS, credentials, errorResponses } from "./common-schemas.ts";
import { pageResponse, pageTokenParameter } from "./paging.ts";

const inboundMessage = {
  type: "object",
  required: ["id", "from", "to", "text", "parts", "receivedAt"],
  properties: {
    id: { type: "integer" },
    from: {
      type: "string",
      description:
        "The handset: + and digits when the carrier gave the number in international form, else as the carrier gave it",
    },
    to: { type: "string", description: "The account's number it was sent to, as assigned" },
    text: { type: "string" },
    parts: {
      type: "integer",
      description: "Parts it came in; for an incomplete message, the parts that came",
    },
    receivedAt: { type: "string", format: "date-time" },
    optOutType: {
      type: "string",
      enum: ["STOP", "START", "HELP"],
      description:
        "Present when the whole text was an opt-out word: STOP opted the sender out of the account's messages, START lifted it, HELP was answered",
    },
    incomplete: {
      type: "boolean",
      description: "Present (true) when parts never came: the text is what came",
    },
  },
} as const;

/** GET /inbound/{id} only: the inbound webhook's progress, as GetMessage shows a status's. */
const inboundWebhook = {
  type: "object",
  description:
    "Its inbound webhook with every attempt; present only when the account had an inbound URL when the message came",
  required: ["state", "url", "attempts"],
  properties: {
    state: {
      type: "string",
      enum: ["PENDING", "DELIVERED", "GAVE_UP", "SKIPPED"],
      description:
        "PENDING: to be sent or retried; DELIVERED: a 2xx answer; GAVE_UP: the retry schedule ran out, or the address is not public; SKIPPED: the account had no inbound URL any more",
    },
    url: {
      type: "string",
      description: "The inbound URL it is (or was last) sent to; empty before its first attempt",
    },
    attempts: {
      type: "array",
      description: "Every request made, oldest first",
      items: {
        type: "object",
        required: ["at", "httpStatus", "durationMs"],
        properties: {
          at: { type: "string", format: "date-time" },
          httpStatus: {
            type: "integer",
            description: "The receiver's HTTP status; 0 when none came (timeout, refused, blocked)",
          },
          error: {
            type: "string",
            description:
              'Why it failed, in a few words, e.g. "ERR_ADDRESS_BLOCKED: callback address is not a public address"; absent on success',
          },
          durationMs: { type: "integer" },
        },
      },
    },
    nextAttemptAt: {
      type: "string",
      format: "date-time",
      description: "When the next attempt is due (PENDING only)",
    },
  },
} as const;

export const listInboundSchema = {
  summary: "List inbound messages",
  description:
    "Messages handsets sent to the account's numbers, newest first, at most 100 a page. apiKey and apiSecret are query parameters; filters combine with AND.",
  tags: ["inbound"],
  querystring: {
    type: "object",
    required: ["apiKey", "apiSecret"],
    properties: {
      ...credentials,
      from: { type: "string", description: "Only messages from this handset number, exactly" },
      to: { type: "string", description: "Only messages to this number of the account" },
      since: {
        type: "string",
        format: "date-time",
        description: "Only messages received at or after this time (RFC 3339)",
      },
      pageToken: pageTokenParameter(
        "nextPageToken of the previous page, with the same filters; absent for the first",
      ),
    },
  },
  response: {
    200: pageResponse("A page of inbound messages", "inbound", inboundMessage),
    ...errorResponses("arrays", ALWAYS, {
      400: { since: ["since must be a date-time such as 2025-06-01T12:00:00Z"] },
    }),
  },
} as const;

export const getInboundSchema = {
  summary: "Read an inbound message",
  description:
    "apiKey and apiSecret are query parameters. Another account's message is answered like an unknown one (404).",
  tags: ["inbound"],
  params: {
    type: "object",
    required: ["id"],
    properties: {
      id: { type: "string", pattern: "^[1-9][0-9]{0,15}$", description: "Inbound message id" },
    },
  },
  querystring: { type: "object", required: ["apiKey", "apiSecret"], properties: credentials },
  response: {
    200: {
      ...inboundMessage,
      description: "The inbound message, with its inbound webhook's attempts",
      properties: { ...inboundMessage.properties, webhook: inboundWebhook },
    },
    ...errorResponses("arrays", [...ALWAYS, 404], {
      404: { id: ["no inbound message with id 42"] },
    }),
  },
} as const;
