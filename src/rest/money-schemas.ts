// JSON Schemas of the money operations (docs/design.md "Money: what is charged, the ledger,
// usage and spend controls"). Amounts are in credit units, as `price` and `creditRemaining`.

import { ALWAYS, credentials, errorResponses } from "./common-schemas.ts";
import { pageResponse, pageTokenParameter } from "./paging.ts";

const amount = { type: "number", description: "In credit units" } as const;

const spendControls = {
  type: "object",
  required: ["allowedCountries", "spentToday"],
  properties: {
    allowedCountries: {
      type: "array",
      items: { type: "string" },
      description:
        "ISO 3166 alpha-2 codes it may send to (ZZ: numbers without a country); empty: all",
    },
    maxPricePerMessage: { ...amount, description: "A message that would cost more is refused" },
    dailySpendLimit: {
      ...amount,
      description: "Charges of the current UTC day, less their refunds, never pass it",
    },
    spentToday: { ...amount, description: "Charged today (UTC) less the refunds of those charges" },
  },
} as const;

const hhmm = (what: string, example: string) =>
  ({
    type: "string",
    description: `${what}: HH:MM (00:00 to 23:59) in the recipient's local time`,
    examples: [example],
  }) as const;

/** The account's quiet hours as GET /account shows them and PATCH /account/quiet-hours takes them. */
export const quietHoursFields = {
  start: hhmm("When quiet hours begin", "21:00"),
  end: hhmm("When they end, different from start", "08:00"),
} as const;

const quietHours = {
  type: "object",
  required: ["start", "end"],
  description:
    "Messages due within them in their recipient's local time are held until they end; absent: none",
  properties: quietHoursFields,
} as const;

/** The account as GET /account answers it, and every change to its settings. */
export const account = {
  type: "object",
  required: ["apiKey", "name", "status", "credit", "spendControls"],
  properties: {
    apiKey: { type: "string" },
    name: { type: "string" },
    status: { type: "string", enum: ["ACTIVE", "SUSPENDED", "CLOSED"] },
    suspendReason: { type: "string" },
    credit: amount,
    statusUrl: { type: "string" },
    defaultSender: { type: "string" },
    spendControls,
    quietHours,
  },
} as const;

export const getAccountSchema = {
  summary: "Read the account",
  description:
    "The account's credit, settings, spend controls and quiet hours. apiKey and apiSecret are query parameters.",
  tags: ["account"],
  querystring: { type: "object", required: ["apiKey", "apiSecret"], properties: credentials },
  response: {
    200: { ...account, description: "The account" },
    ...errorResponses("arrays", ALWAYS),
  },
} as const;

const nullable = <T extends object>(schema: T) => ({ anyOf: [schema, { type: "null" }] }) as const;

export const updateSpendControlsSchema = {
  summary: "Change the spend controls",
  description:
    "JSON body: apiKey, apiSecret and any of allowedCountries, maxPricePerMessage, dailySpendLimit; null clears one. Answers the account as GET /account does.",
  tags: ["account"],
  consumes: ["application/json"],
  body: {
    type: "object",
    required: ["apiKey", "apiSecret"],
    properties: {
      ...credentials,
      allowedCountries: nullable({ type: "array", items: { type: "string" }, maxItems: 300 }),
      maxPricePerMessage: nullable({ type: "number", minimum: 0, maximum: 1_000_000_000 }),
      dailySpendLimit: nullable({ type: "number", minimum: 0, maximum: 1_000_000_000 }),
    },
  },
  response: {
    200: { ...account, description: "The account after the change" },
    ...errorResponses("arrays", [...ALWAYS, 413]),
  },
} as const;

const ledgerEntry = {
  type: "object",
  required: ["id", "time", "kind", "amount"],
  properties: {
    id: {
      type: "string",
      description: "ch_ single sends, bt_ a batch, rf_ a refund, cr_ a credit",
    },
    time: { type: "string", format: "date-time" },
    kind: { type: "string", enum: ["CHARGE", "REFUND", "CREDIT"] },
    amount: { ...amount, description: "Signed, in credit units: a charge is negative" },
    messageIds: { type: "array", items: { type: "integer" } },
    batchId: { type: "integer" },
    note: { type: "string" },
  },
} as const;

const time = { type: "string", format: "date-time" } as const;

export const listLedgerSchema = {
  summary: "List ledger entries",
  description:
    "Every change of the account's credit, oldest first: credit at creation plus the sum of the entries is the credit whenever nothing is in flight. since included, until excluded (RFC 3339).",
  tags: ["account"],
  querystring: {
    type: "object",
    required: ["apiKey", "apiSecret"],
    properties: {
      ...credentials,
      since: { ...time, description: "Entries at or after this time" },
      until: { ...time, description: "Entries before this time" },
      pageSize: { type: "string", description: "Entries a page: 1 to 1000, default 100" },
      pageToken: pageTokenParameter(),
    },
  },
  response: {
    200: pageResponse("A page of the ledger", "entries", ledgerEntry),
    ...errorResponses("arrays", ALWAYS),
  },
} as const;

const usageRow = {
  type: "object",
  required: ["messages", "parts", "charged", "refunded"],
  properties: {
    day: { type: "string", description: "UTC YYYY-MM-DD, when grouped by day" },
    country: {
      type: "string",
      description: "ISO 3166 alpha-2 (ZZ: none), when grouped by country",
    },
    messages: { type: "integer" },
    parts: { type: "integer" },
    charged: amount,
    refunded: { ...amount, description: "Refunds of those messages' unsent parts" },
  },
} as const;

export const getUsageSchema = {
  summary: "Usage by day and country",
  description:
    "Messages, parts, charged and refunded between two UTC dates (since included, until excluded), grouped by day and/or country. JSON, or CSV with Accept: text/csv (a header row, the same columns).",
  tags: ["account"],
  querystring: {
    type: "object",
    required: ["apiKey", "apiSecret", "since", "until"],
    properties: {
      ...credentials,
      since: { type: "string", description: "First UTC day, YYYY-MM-DD", examples: ["2026-11-01"] },
      until: {
        type: "string",
        description: "UTC day after the last, YYYY-MM-DD",
        examples: ["2026-12-01"],
      },
      groupBy: { type: "string", description: "day, country or day,country; absent: one row" },
    },
  },
  response: {
    200: {
      description: "The rows, by day then country",
      type: "object",
      required: ["rows"],
      properties: { rows: { type: "array", items: usageRow } },
    },
    ...errorResponses("arrays", ALWAYS),
  },
} as const;
