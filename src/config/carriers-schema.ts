/**
 * JSON Schema (draft-07, Ajv) of `SMS_CARRIERS_FILE`: its structure, types and ranges. What a
 * schema says badly (names, URLs, country codes, prefixes, which carriers exist, the default
 * route) is checked in carriers-file.ts with messages of its own.
 */
import { NUMBER_TYPES } from "../domain/destination.ts";

const positiveInteger = (maximum: number) => ({ type: "integer", minimum: 1, maximum });
// Prices per part in the account's credit, as SMS_PRICE_PER_PART.
const price = { type: "number", minimum: 0, maximum: 1_000_000 };
const strings = { type: "array", minItems: 1, items: { type: "string" } };

export const CARRIERS_FILE_SCHEMA = {
  type: "object",
  additionalProperties: false,
  required: ["carriers", "routes"],
  properties: {
    carriers: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name", "url"],
        properties: {
          name: { type: "string" },
          url: { type: "string" },
          binds: positiveInteger(64),
          window: positiveInteger(100_000),
          // 0: no limit, as SMS_SMPP_TPS=0.
          tps: { type: "integer", minimum: 0, maximum: 1_000_000 },
          systemType: { type: "string", maxLength: 12 },
          enquireLinkSeconds: positiveInteger(3600),
          concatenation: { enum: ["sar", "udh"] },
          moAlphabet: { enum: ["gsm7", "ia5", "latin1"] },
          // Carrier-grade SMPP (docs/design.md): how the carrier writes numbers and receipts.
          country: { type: "string" },
          nationalPrefix: { type: "string", pattern: "^[0-9]{0,4}$" },
          receiptIds: { enum: ["exact", "auto"] },
          multipartReceipts: { enum: ["each", "any"] },
        },
      },
    },
    routes: {
      type: "array",
      minItems: 1,
      items: {
        type: "object",
        additionalProperties: false,
        required: ["name"],
        properties: {
          name: { type: "string" },
          match: {
            type: "object",
            additionalProperties: false,
            properties: {
              countries: strings,
              prefixes: strings,
              numberTypes: { type: "array", minItems: 1, items: { enum: NUMBER_TYPES } },
              senders: strings,
            },
          },
          carriers: strings,
          split: {
            type: "object",
            minProperties: 1,
            additionalProperties: { type: "number", exclusiveMinimum: 0 },
          },
        },
      },
    },
    prices: {
      type: "object",
      additionalProperties: false,
      properties: {
        default: price,
        countries: { type: "object", additionalProperties: price },
        prefixes: { type: "object", additionalProperties: price },
      },
    },
    failover: {
      type: "object",
      additionalProperties: false,
      properties: {
        afterSeconds: positiveInteger(3600),
        circuitWindow: positiveInteger(10_000),
        circuitOpenSeconds: positiveInteger(3600),
      },
    },
    // The toll-fraud guard (docs/design.md "Money", "Toll-fraud guard").
    risk: {
      type: "object",
      additionalProperties: false,
      properties: {
        mode: { enum: ["monitor", "block"] },
        prefixBurst: {
          type: "object",
          additionalProperties: false,
          properties: {
            max: positiveInteger(1_000_000),
            digits: positiveInteger(8),
            windowSeconds: positiveInteger(86_400),
          },
        },
      },
    },
  },
} as const;
