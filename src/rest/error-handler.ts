import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { TTL_ERROR } from "../domain/limits.ts";
import { fieldErrorsOf } from "../services/errors.ts";

// One place maps every error to the spec's bodies: `{errors: {param: [msg]}}`, or
// `{errors: {param: msg}}` on routes marked `config: { stringErrors: true }` (POST /sms-batch).
// A 5xx never shows internals.

export type FieldErrorList = Record<string, string[]>;

declare module "fastify" {
  interface FastifyContextConfig {
    /** Render error values as one string instead of an array of strings. */
    stringErrors?: boolean;
  }
}

const HTTP_STATUS: Partial<Record<Code, number>> = {
  [Code.InvalidArgument]: 400,
  [Code.Unauthenticated]: 401,
  [Code.FailedPrecondition]: 402,
  [Code.NotFound]: 404,
  [Code.ResourceExhausted]: 429,
};

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((thrown: FastifyError | ConnectError, request, reply) => {
    if (thrown instanceof ConnectError) {
      const status = HTTP_STATUS[thrown.code];
      if (status) {
        const errors: FieldErrorList = {};
        for (const { field, message } of fieldErrorsOf(thrown)) (errors[field] ??= []).push(message);
        if (Object.keys(errors).length === 0) errors.request = [thrown.rawMessage];
        return send(request, reply, status, errors);
      }
      request.log.error({ err: thrown }, "service call failed");
      return send(request, reply, 500, { request: ["internal error; please retry later"] });
    }
    const error = thrown;
    if (error.validation) {
      return send(request, reply, 400, validationErrors(error.validation as AjvError[], error.validationContext));
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const message = status === 415 ? unsupportedMediaType(request) : error.message;
      // 415 from the content-type check is a parse failure in the spec's terms.
      return send(request, reply, status === 415 ? 400 : status, { request: [message] });
    }
    request.log.error({ err: error }, "request failed");
    return send(request, reply, 500, { request: ["internal error; please retry later"] });
  });
}

/** Unknown paths answer in the same shape as every other error. */
export function registerNotFoundHandler(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) =>
    send(request, reply, 404, { request: [`no such endpoint: ${request.method} ${request.url.split("?")[0]}`] }),
  );
}

function send(request: FastifyRequest, reply: FastifyReply, status: number, errors: FieldErrorList) {
  const body = request.routeOptions.config?.stringErrors
    ? { errors: Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, v.join("; ")])) }
    : { errors };
  if (status === 429) reply.header("retry-after", "1");
  // The error bodies are not in the success schema: skip response serialization.
  return reply.code(status).type("application/json").serializer(JSON.stringify).send(body);
}

function unsupportedMediaType(request: FastifyRequest): string {
  const type = request.headers["content-type"] ?? "none";
  return `cannot parse a body of content type ${type}`;
}

function validationErrors(list: AjvError[], context: string | undefined): FieldErrorList {
  const errors: FieldErrorList = {};
  for (const error of list) {
    const [field, message] = describe(error, context);
    const messages = (errors[field] ??= []);
    if (!messages.includes(message)) messages.push(message);
  }
  return errors;
}

function describe(error: AjvError, context: string | undefined): [string, string] {
  const path = error.instancePath.split("/").slice(1);
  const field =
    error.keyword === "required" && path.length === 0
      ? String(error.params.missingProperty)
      : (path[0] ?? "request");
  if (field === "request") {
    return ["request", context === "body" ? "the body must be an object of parameters" : `the ${context ?? "request"} is malformed`];
  }
  const where = path.length > 1 ? `${field}[${path.slice(1).join("].")}` : field;
  const name = path.length > 1 && error.keyword === "type" ? `${where}` : where;
  switch (error.keyword) {
    case "required":
    case "minItems":
      return [field, `${field} cannot be empty`];
    case "minLength":
      return [field, `${name} cannot be empty`];
    case "type":
      return [field, `${name} must be ${article(String(error.params.type))}`];
    case "minimum":
    case "maximum":
      return [field, field === "ttl" ? TTL_ERROR : `${name} ${error.message}`];
    case "maxItems":
      return [field, `${field} holds more than ${error.params.limit} messages; at most ${error.params.limit} are allowed`];
    case "maxLength":
    case "pattern":
      return [field, limitMessage(field, name, error)];
    case "enum":
      return [field, `${name} must be one of ${(error.params.allowedValues as string[]).join(", ")}`];
    default:
      return [field, `${name} ${error.message ?? "is invalid"}`];
  }
}

function limitMessage(field: string, name: string, error: AjvError): string {
  if (field === "id") return "id must be a positive integer";
  if (field === "name" && error.params.limit === 20) return "name must be at most 20 characters";
  if (field === "name") return "name must be at most 11 characters, letters and digits only";
  return `${name} ${error.message ?? "is invalid"}`;
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}
