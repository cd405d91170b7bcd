import { create } from "@bufbuild/protobuf";
import { type Duration, DurationSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  ResourceInfoSchema,
  RetryInfoSchema,
} from "../../gen/google/rpc/error_details_pb.ts";

// Every error a service raises carries the standard details generic tooling reads
// (google.rpc, AIP-193): ErrorInfo with a stable reason in our domain, BadRequest with the proto
// field paths of what was wrong, RetryInfo when a retry later may succeed, ResourceInfo on
// NOT_FOUND. The REST façade renders the same details in the spec's shape (src/rest/error-handler.ts).

/** ErrorInfo.domain of every error of this service. */
export const ERROR_DOMAIN = "sms.example.com";

/** The key of a message about the request as a whole, not one of its fields. */
export const WHOLE_REQUEST = "request";

/**
 * Stable ErrorInfo reasons (UPPER_SNAKE_CASE, never renamed once released). Clients branch on
 * these, not on messages.
 */
export type Reason =
  | "FIELD_INVALID"
  | "CREDENTIALS_MISSING"
  | "CREDENTIALS_INVALID"
  | "OPERATOR_TOKEN_INVALID"
  | "CREDIT_INSUFFICIENT"
  | "BATCH_NOT_FOUND"
  | "MESSAGE_NOT_FOUND"
  | "SENDER_NAME_NOT_FOUND"
  | "SENDER_NAME_EXISTS"
  | "SENDER_NAME_LIMIT_REACHED"
  | "SENDER_NAME_APPROVED"
  | "ACCOUNT_NOT_FOUND"
  | "PAGE_TOKEN_INVALID"
  | "RATE_LIMITED"
  | "AUTH_FAILURES_LIMITED"
  | "IDEMPOTENCY_KEY_INVALID"
  | "IDEMPOTENCY_KEY_IN_USE"
  | "IDEMPOTENCY_KEY_REUSED"
  | "ACCOUNT_BUSY"
  | "DATABASE_UNAVAILABLE"
  | "OUTCOME_UNKNOWN"
  | "RECIPIENT_OPTED_OUT"
  | "OPT_OUT_NOT_FOUND"
  | "OPT_OUT_NOT_REMOVABLE"
  | "INBOUND_MESSAGE_NOT_FOUND"
  | "NUMBER_NOT_FOUND"
  | "NUMBER_ASSIGNED_ELSEWHERE"
  | "SIMULATOR_ONLY"
  | "LARGE_BODIES_LIMITED"
  | "MESSAGE_ALREADY_SUBMITTED"
  | "COUNTRY_NOT_ALLOWED"
  | "PRICE_ABOVE_LIMIT"
  | "DAILY_SPEND_LIMIT"
  | "SUSPECTED_TOLL_FRAUD"
  | "API_KEY_SCOPE"
  | "API_KEY_REVOKED"
  | "API_KEY_EXPIRED"
  | "API_KEY_NOT_FOUND"
  | "API_KEY_LIMIT_REACHED"
  | "OWN_KEY"
  | "LAST_FULL_KEY"
  | "ACCOUNT_SUSPENDED"
  | "ACCOUNT_CLOSED";

/** The reason when the raiser names none: each code is used for one kind of refusal mostly. */
const REASON_BY_CODE: Partial<Record<Code, Reason>> = {
  [Code.InvalidArgument]: "FIELD_INVALID",
  [Code.Unauthenticated]: "CREDENTIALS_INVALID",
  [Code.FailedPrecondition]: "CREDIT_INSUFFICIENT",
  [Code.ResourceExhausted]: "RATE_LIMITED",
  [Code.Aborted]: "IDEMPOTENCY_KEY_IN_USE",
  [Code.AlreadyExists]: "IDEMPOTENCY_KEY_REUSED",
  [Code.Unavailable]: "DATABASE_UNAVAILABLE",
};

/** RetryInfo's delay when the raiser gives none; the REST façade's Retry-After defaults match. */
const DEFAULT_RETRY_SECONDS: Partial<Record<Code, number>> = {
  [Code.ResourceExhausted]: 1,
  [Code.Unavailable]: 3,
};

/** Proto field path (`to`, `messages[3].to`) or WHOLE_REQUEST -> what is wrong with it. */
export type FieldMessages = Record<string, string>;

type Details = NonNullable<ConstructorParameters<typeof ConnectError>[3]>;

export interface ErrorOptions {
  reason?: Reason;
  /** When a retry may succeed; RESOURCE_EXHAUSTED and UNAVAILABLE get a default. */
  retryAfterSeconds?: number;
  /** ResourceInfo of NOT_FOUND: what was looked for. */
  resource?: { type: string; name: string };
  metadata?: Record<string, string>;
}

export function fieldErrors(
  code: Code,
  fields: FieldMessages,
  options: ErrorOptions = {},
): ConnectError {
  const violations = Object.entries(fields)
    .filter(([field]) => field !== WHOLE_REQUEST)
    .map(([field, description]) => ({ field, description }));
  const reason = options.reason ?? REASON_BY_CODE[code] ?? Code[code].toUpperCase();
  const details: Details = [
    {
      desc: ErrorInfoSchema,
      value: create(ErrorInfoSchema, {
        reason,
        domain: ERROR_DOMAIN,
        metadata: options.metadata ?? {},
      }),
    },
  ];
  if (violations.length > 0) {
    details.push({
      desc: BadRequestSchema,
      value: create(BadRequestSchema, { fieldViolations: violations }),
    });
  }
  const retry = options.retryAfterSeconds ?? DEFAULT_RETRY_SECONDS[code];
  if (retry !== undefined) {
    details.push({
      desc: RetryInfoSchema,
      value: create(RetryInfoSchema, { retryDelay: seconds(retry) }),
    });
  }
  if (options.resource) {
    details.push({
      desc: ResourceInfoSchema,
      value: create(ResourceInfoSchema, {
        resourceType: options.resource.type,
        resourceName: options.resource.name,
        description: Object.values(fields).join("; "),
      }),
    });
  }
  return new ConnectError(summary(fields), code, undefined, details);
}

/** The request's own message alone, else every field's, prefixed with its path. */
function summary(fields: FieldMessages): string {
  const entries = Object.entries(fields);
  if (entries.length === 1 && entries[0]?.[0] === WHOLE_REQUEST) return entries[0][1];
  return entries.map(([field, message]) => `${field}: ${message}`).join("; ");
}

function seconds(value: number): Duration {
  const whole = Math.floor(value);
  return create(DurationSchema, {
    seconds: BigInt(whole),
    nanos: Math.round((value - whole) * 1e9),
  });
}

/** The BadRequest field violations of an error, as `{field, message}`. */
export function fieldErrorsOf(error: ConnectError): { field: string; message: string }[] {
  return error
    .findDetails(BadRequestSchema)
    .flatMap((detail) => detail.fieldViolations)
    .map((v) => ({ field: v.field, message: v.description }));
}

/** The ErrorInfo reason of an error, when it has one. */
export function errorReasonOf(error: ConnectError): string | undefined {
  return error.findDetails(ErrorInfoSchema)[0]?.reason;
}

export const invalidArgument = (fields: FieldMessages, reason?: Reason) =>
  fieldErrors(Code.InvalidArgument, fields, reason ? { reason } : {});

/** NOT_FOUND about the request field `field`, e.g. `id`, with ResourceInfo. */
export const notFound = (
  field: string,
  message: string,
  reason: Reason,
  resource: { type: string; name: string },
) => fieldErrors(Code.NotFound, { [field]: message }, { reason, resource });

export const unauthenticated = (message: string, reason: Reason = "CREDENTIALS_INVALID") =>
  fieldErrors(Code.Unauthenticated, { [WHOLE_REQUEST]: message }, { reason });

/** Beyond the key's scope, or the account's status: 403 on REST. */
export const permissionDenied = (message: string, reason: Reason) =>
  fieldErrors(Code.PermissionDenied, { [WHOLE_REQUEST]: message }, { reason });

/** Not enough credit: FAILED_PRECONDITION is used for nothing else, so the REST side maps it to 402. */
export const insufficientCredit = (message: string) =>
  fieldErrors(Code.FailedPrecondition, { [WHOLE_REQUEST]: message });

export const cannotBeEmpty = (field: string) => `${field} cannot be empty`;

/** The service cannot serve the call now: 503 with Retry-After on REST, UNAVAILABLE on RPC. */
export const unavailable = (message: string, reason: Reason = "DATABASE_UNAVAILABLE") =>
  fieldErrors(Code.Unavailable, { [WHOLE_REQUEST]: message }, { reason });
