// Parts of the REST API's JSON Schemas that every operation shares: credentials, the
// Idempotency-Key header and the error responses in the spec's shapes.

export const credentials = {
  apiKey: { type: "string", minLength: 1, description: "Account API key" },
  apiSecret: { type: "string", minLength: 1, description: "Account API secret" },
} as const;

/** `Idempotency-Key` (docs/design.md "Idempotency and rate limits"), on the operations that create. */
export const idempotencyHeaders = {
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
    description:
      "apiKey and apiSecret do not match an account, or the key was revoked or has expired (`request`)",
    arrays: { request: ["apiKey and apiSecret do not match an account"] },
    strings: { request: "apiKey and apiSecret do not match an account" },
  },
  402: {
    description: "Not enough credit (`request`); nothing was stored or charged",
    arrays: { request: ["not enough credit: this request costs 2; the account has 1"] },
    strings: { request: "not enough credit: this request costs 2; the account has 1" },
  },
  403: {
    description:
      "The API key's scope does not allow this operation, or the account is suspended (`request`); nothing was stored or charged",
    arrays: { request: ["this account is suspended: unpaid invoice"] },
    strings: { request: "this account is suspended: unpaid invoice" },
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

export type ErrorStatus = keyof typeof ERRORS;

/** The error responses an endpoint can give, each with its example. */
export function errorResponses(
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
export const ALWAYS: ErrorStatus[] = [400, 401, 429, 503];

export const authQuery = {
  type: "object",
  required: ["apiKey", "apiSecret"],
  properties: credentials,
} as const;
