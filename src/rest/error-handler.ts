import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { TTL_ERROR, tooLong } from "../domain/limits.ts";
import { errorReasonOf, fieldErrorsOf } from "../errors/api-errors.ts";
import { forwardServiceHeaders } from "./call-options.ts";
import { restParameter } from "./parameter-names.ts";

// One place maps every error to the spec's bodies: `{errors: {param: [msg]}}`, or
// `{errors: {param: msg}}` on routes marked `config: { stringErrors: true }` (POST /sms-batch)
// for its parameters and the service's refusals. A request that cannot be read or parsed
// (syntax, content type, size) is `{errors: {request: [msg]}}` on every route (design table).
// A 5xx never shows internals.

export type FieldErrorList = Record<string, string[]>;

declare module "fastify" {
  interface FastifyContextConfig {
    /** Render error values as one string instead of an array of strings. */
    stringErrors?: boolean;
  }
}

/** The HTTP status of a service refusal; the dashboard answers with the same ones. */
export const HTTP_STATUS: Partial<Record<Code, number>> = {
  [Code.InvalidArgument]: 400,
  [Code.Unauthenticated]: 401,
  [Code.FailedPrecondition]: 402,
  // A key beyond its scope, a suspended account (docs/design.md "Accounts, API keys and the
  // operator console").
  [Code.PermissionDenied]: 403,
  [Code.NotFound]: 404,
  // Idempotency keys (src/idempotency): the first request with the key is still running; the
  // key was used with another request.
  [Code.Aborted]: 409,
  [Code.AlreadyExists]: 422,
  [Code.ResourceExhausted]: 429,
  // The database cannot serve the call now
  // (docs/decisions.md, "Storage, money and crash safety").
  [Code.Unavailable]: 503,
};

/**
 * Refusals whose HTTP status is not their code's: a send to an opted-out number is a bad `to`
 * (400, docs/design.md "Scope and effect"), not a payment matter; an opt-out the caller may not lift
 * conflicts with the list's state (409).
 */
export const HTTP_STATUS_BY_REASON: Partial<Record<string, number>> = {
  RECIPIENT_OPTED_OUT: 400,
  OPT_OUT_NOT_REMOVABLE: 409,
  // A cancel of a message a carrier or a worker already has.
  MESSAGE_ALREADY_SUBMITTED: 409,
  // A destination the account's spend controls or the toll-fraud guard refuse is a bad `to`
  // (docs/design.md "Money"); the daily limit stays 402, like missing credit.
  COUNTRY_NOT_ALLOWED: 400,
  PRICE_ABOVE_LIMIT: 400,
  SUSPECTED_TOLL_FRAUD: 400,
  // The account's keys and status: conflicts with their state, not payment matters.
  OWN_KEY: 409,
  LAST_FULL_KEY: 409,
  API_KEY_LIMIT_REACHED: 409,
  ACCOUNT_CLOSED: 409,
};

/** The HTTP status of a service refusal (REST and the dashboard); undefined for a failure. */
export function httpStatusOf(error: ConnectError): number | undefined {
  const reason = errorReasonOf(error);
  return (reason && HTTP_STATUS_BY_REASON[reason]) || HTTP_STATUS[error.code];
}

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((thrown: FastifyError | ConnectError, request, reply) => {
    if (thrown instanceof ConnectError) {
      const status = httpStatusOf(thrown);
      if (status) {
        const errors: FieldErrorList = {};
        for (const { field, message } of fieldErrorsOf(thrown)) {
          add(errors, restParameter(field), message);
        }
        if (Object.keys(errors).length === 0) errors.request = [thrown.rawMessage];
        forwardServiceHeaders(thrown.metadata, reply);
        return send(request, reply, status, errors);
      }
      request.log.error({ err: thrown }, "service call failed");
      return send(request, reply, 500, { request: ["internal error; please retry later"] });
    }
    const error = thrown;
    if (error.validation) {
      const errors = validationErrors(
        request,
        error.validation as AjvError[],
        error.validationContext,
      );
      // The body is not an object at all: a parse failure, not a parameter's error.
      return send(request, reply, 400, errors, "request" in errors ? "parse" : "parameters");
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      // 415 from the content-type check is a parse failure in the spec's terms.
      if (status === 415) {
        return send(request, reply, 400, { request: [unsupportedMediaType(request)] }, "parse");
      }
      if (error.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
        return send(request, reply, 413, { request: [bodyTooLarge(request)] }, "parse");
      }
      return send(request, reply, status, { request: [error.message] }, "parse");
    }
    request.log.error({ err: error }, "request failed");
    return send(request, reply, 500, { request: ["internal error; please retry later"] });
  });
}

/**
 * For Fastify's `frameworkErrors` option: errors raised before routing (a path that is not valid
 * percent-encoded UTF-8, FST_ERR_BAD_URL) get the same body as every other error.
 */
export function frameworkErrors(
  error: FastifyError,
  _request: FastifyRequest,
  reply: FastifyReply,
) {
  const status =
    error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
  const message =
    error.code === "FST_ERR_BAD_URL"
      ? "the request path is not correctly percent-encoded UTF-8"
      : error.message;
  return reply
    .code(status)
    .type("application/json")
    .serializer(JSON.stringify)
    .send({ errors: { request: [message] } });
}

/** Unknown paths answer in the same shape as every other error. */
export function registerNotFoundHandler(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) =>
    send(request, reply, 404, {
      request: [`no such endpoint: ${request.method} ${request.url.split("?")[0]}`],
    }),
  );
}

function add(errors: FieldErrorList, field: string, message: string): void {
  const messages = errors[field] ?? [];
  errors[field] = messages;
  if (!messages.includes(message)) messages.push(message);
}

/** What an error is about: the parameters (or the service's refusal), or the request's bytes. */
type ErrorKind = "parameters" | "parse";

function send(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  errors: FieldErrorList,
  kind: ErrorKind = "parameters",
) {
  const body =
    kind === "parameters" && request.routeOptions.config?.stringErrors
      ? { errors: Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, v.join("; ")])) }
      : { errors };
  if (status === 429 && !reply.hasHeader("retry-after")) reply.header("retry-after", "1");
  if (status === 503 && !reply.hasHeader("retry-after")) reply.header("retry-after", "3");
  // The error bodies are not in the success schema: skip response serialization.
  return reply.code(status).type("application/json").serializer(JSON.stringify).send(body);
}

function unsupportedMediaType(request: FastifyRequest): string {
  const type = request.headers["content-type"];
  const accepted = request.routeOptions.config?.stringErrors
    ? "application/json"
    : "application/json or application/x-www-form-urlencoded";
  return type
    ? `cannot parse a body of content type ${type}: send ${accepted}`
    : `the body has no content type: send ${accepted}`;
}

function bodyTooLarge(request: FastifyRequest): string {
  const limit = request.routeOptions.bodyLimit;
  return limit
    ? `the body is larger than the limit of ${limit} bytes for ${request.method} ${request.routeOptions.url}`
    : "the body is too large";
}

/** A field with thousands of invalid items (a batch) lists the first few, then a count. */
const MAX_MESSAGES_PER_FIELD = 10;

function validationErrors(
  request: FastifyRequest,
  list: AjvError[],
  context: string | undefined,
): FieldErrorList {
  const errors: FieldErrorList = {};
  const more: Record<string, number> = {};
  for (const error of list) {
    const [field, message] = describe(request, error, context);
    const messages = errors[field] ?? [];
    if (messages.includes(message)) continue;
    if (messages.length >= MAX_MESSAGES_PER_FIELD) {
      more[field] = (more[field] ?? 0) + 1;
      continue;
    }
    add(errors, field, message);
  }
  for (const [field, count] of Object.entries(more)) {
    errors[field]?.push(`and ${count} more error${count === 1 ? "" : "s"} in ${field}`);
  }
  return errors;
}

function describe(
  request: FastifyRequest,
  error: AjvError,
  context: string | undefined,
): [string, string] {
  const path = error.instancePath.split("/").slice(1);
  const field =
    error.keyword === "required" && path.length === 0
      ? String(error.params.missingProperty)
      : (path[0] ?? "request");
  if (field === "request") return ["request", wholeInputError(request, context)];
  // messages[3].to, messages[3]
  const name =
    path.length > 1
      ? `${field}[${path[1]}]${path
          .slice(2)
          .map((p) => `.${p}`)
          .join("")}`
      : field;
  if (field === "ttl") return [field, TTL_ERROR];
  switch (error.keyword) {
    case "required":
    case "minItems":
    case "minLength":
      return [field, `${name} cannot be empty`];
    case "type":
      // A nullable parameter's type is "string,null": null is taken as absent, never wrong.
      return [field, `${name} must be ${article(String(error.params.type).split(",")[0] ?? "")}`];
    case "maxItems":
      return [
        field,
        `${field} holds more than ${error.params.limit} messages; at most ${error.params.limit} are allowed`,
      ];
    case "maxLength":
    case "pattern":
      return [field, limitMessage(field, name, error)];
    case "format":
      if (error.params.format === "date-time") {
        return [field, `${name} must be a date-time such as 2025-06-01T12:00:00Z`];
      }
      return [field, `${name} must be ${article(String(error.params.format))}`];
    case "enum":
      return [
        field,
        `${name} must be one of ${(error.params.allowedValues as string[]).join(", ")}`,
      ];
    default:
      return [field, `${name} ${error.message ?? "is invalid"}`];
  }
}

function wholeInputError(request: FastifyRequest, context: string | undefined): string {
  if (context !== "body") return `the ${context ?? "request"} is malformed`;
  if (request.body === undefined || request.body === null) {
    const accepted = request.routeOptions.config?.stringErrors
      ? "a JSON object"
      : "a JSON object or a form (application/x-www-form-urlencoded)";
    return `the request has no body: send the parameters as ${accepted}`;
  }
  return "the body must be an object of parameters";
}

function limitMessage(field: string, name: string, error: AjvError): string {
  if (field === "id") return "id must be a positive integer";
  if (field === "name" && error.params.limit === 20) return "name must be at most 20 characters";
  if (field === "name") return "name must be at most 11 characters, letters and digits only";
  if (field === "idempotency-key")
    return "Idempotency-Key must be 1 to 255 visible ASCII characters";
  if (error.keyword === "maxLength") return tooLong(name, Number(error.params.limit));
  return `${name} ${error.message ?? "is invalid"}`;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
