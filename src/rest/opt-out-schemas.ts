// JSON Schemas of the opt-out operations (see message-schemas.ts for why schemas).

import { ALWAYS, authQuery, credentials, errorResponses } from "./common-schemas.ts";
import { pageResponse, pageTokenParameter } from "./paging.ts";

// Checked by the service, which names what is wrong in its own words (as `to` of POST /sms).
const number = {
  type: "string",
  description: "[+][country code][number]: an optional +, then 8 to 15 digits, the first not 0",
  examples: ["+4915112345678"],
} as const;

const source = {
  type: "string",
  enum: ["KEYWORD", "API", "OPERATOR"],
  description:
    "KEYWORD: the handset sent a STOP word (only its START lifts it); API: the account; OPERATOR: the service's operator",
} as const;

const optOut = {
  type: "object",
  required: ["number", "source", "createTime"],
  properties: {
    number: { type: "string", description: "+ and digits" },
    source,
    keyword: { type: "string", description: "The word the handset sent (source KEYWORD only)" },
    createTime: { type: "string", format: "date-time" },
  },
} as const;

const pageToken = pageTokenParameter();

/** One change of the opt-out list. */
const optOutChange = {
  type: "object",
  required: ["number", "action", "source", "time"],
  properties: {
    number: { type: "string" },
    action: { type: "string", enum: ["ADDED", "REMOVED"] },
    source,
    keyword: { type: "string", description: "The word the handset sent" },
    inboundId: {
      type: "integer",
      description: "The inbound message that caused the change (source KEYWORD)",
    },
    time: { type: "string", format: "date-time" },
  },
} as const;

export const listOptOutsSchema = {
  summary: "List opt-outs",
  description:
    "The numbers the account may not send to, newest first, at most 100 a page. apiKey and apiSecret are query parameters.",
  tags: ["opt-outs"],
  querystring: {
    type: "object",
    required: ["apiKey", "apiSecret"],
    properties: { ...credentials, pageToken },
  },
  response: {
    200: pageResponse("A page of the account's opt-out list", "optOuts", optOut),
    ...errorResponses("arrays", ALWAYS),
  },
} as const;

export const createOptOutSchema = {
  summary: "Add a number to the opt-out list",
  description:
    "Form or JSON body. Sends to the number are refused from now on (400, errors.to); its messages accepted and not yet sent end SEND_ERROR with their credit given back. A number on the list already is answered as it is.",
  tags: ["opt-outs"],
  consumes: ["application/x-www-form-urlencoded", "application/json"],
  body: {
    type: "object",
    required: ["number", "apiKey", "apiSecret"],
    properties: { number: { ...number, minLength: 1 }, ...credentials },
  },
  response: {
    200: { ...optOut, description: "The number's opt-out" },
    ...errorResponses("arrays", [...ALWAYS, 413]),
  },
} as const;

export const deleteOptOutSchema = {
  summary: "Remove a number from the opt-out list",
  description:
    "apiKey and apiSecret are query parameters. Only numbers the account added may be removed: a handset's STOP is lifted only by its START (409).",
  tags: ["opt-outs"],
  params: {
    type: "object",
    required: ["number"],
    properties: { number: { ...number, minLength: 1 } },
  },
  querystring: authQuery,
  response: {
    200: { ...optOut, description: "The removed opt-out" },
    ...errorResponses("arrays", [...ALWAYS, 404, 409], {
      404: { number: ["+4915112345678 is not on the opt-out list"] },
      409: {
        number: [
          "+4915112345678 was put on the list by the handset's STOP or by the operator: only the handset's START lifts a STOP",
        ],
      },
    }),
  },
} as const;

export const listOptOutChangesSchema = {
  summary: "Opt-out list history",
  description:
    "Every change of the account's opt-out list, newest first, at most 100 a page: who added or removed which number, when, and the inbound message that caused it. apiKey and apiSecret are query parameters.",
  tags: ["opt-outs"],
  querystring: {
    type: "object",
    required: ["apiKey", "apiSecret"],
    properties: {
      ...credentials,
      number: { ...number, description: "Only the changes of this number" },
      pageToken,
    },
  },
  response: {
    200: pageResponse("A page of changes", "changes", optOutChange),
    ...errorResponses("arrays", ALWAYS),
  },
} as const;
