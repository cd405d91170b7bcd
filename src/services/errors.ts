import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type FieldErrors, FieldErrorsSchema } from "../../gen/sms/v1/types_pb.ts";

// Every error a service raises names the REST parameter it is about, as a FieldErrors detail, so
// both doors report it the same way. The code decides the HTTP status on the REST side.

export type FieldMessages = Record<string, string>;

export function fieldErrors(code: Code, fields: FieldMessages): ConnectError {
  const detail = create(FieldErrorsSchema, {
    errors: Object.entries(fields).map(([field, message]) => ({ field, message })),
  });
  const summary = Object.entries(fields)
    .map(([field, message]) => `${field}: ${message}`)
    .join("; ");
  return new ConnectError(summary, code, undefined, [{ desc: FieldErrorsSchema, value: detail }]);
}

export const invalidArgument = (fields: FieldMessages) => fieldErrors(Code.InvalidArgument, fields);

export const notFound = (field: string, message: string) =>
  fieldErrors(Code.NotFound, { [field]: message });

export const unauthenticated = (message: string) =>
  fieldErrors(Code.Unauthenticated, { request: message });

/** Not enough credit: FAILED_PRECONDITION is used for nothing else, so the REST side maps it to 402. */
export const insufficientCredit = (message: string) =>
  fieldErrors(Code.FailedPrecondition, { request: message });

export function fieldErrorsOf(error: ConnectError): FieldErrors["errors"] {
  return error.findDetails(FieldErrorsSchema).flatMap((detail) => detail.errors);
}

export const cannotBeEmpty = (field: string) => `${field} cannot be empty`;

/** The database cannot serve the call now: 503 with Retry-After on REST, UNAVAILABLE on RPC. */
export const unavailable = (message: string) => fieldErrors(Code.Unavailable, { request: message });
