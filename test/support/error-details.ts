import { ConnectError } from "@connectrpc/connect";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  ResourceInfoSchema,
  RetryInfoSchema,
} from "../../gen/google/rpc/error_details_pb.ts";

/** What a client sees of a failed call: code, ErrorInfo, BadRequest, RetryInfo, ResourceInfo. */
export interface Failure {
  code: number;
  message: string;
  reason: string | undefined;
  domain: string | undefined;
  /** BadRequest field violations: proto field path -> description. */
  fields: Record<string, string>;
  /** RetryInfo's delay in seconds, when there is one. */
  retryDelay: number | undefined;
  resource: { type: string; name: string } | undefined;
}

export function failureOf(error: unknown): Failure {
  const e = ConnectError.from(error);
  const info = e.findDetails(ErrorInfoSchema)[0];
  const retry = e.findDetails(RetryInfoSchema)[0]?.retryDelay;
  const resource = e.findDetails(ResourceInfoSchema)[0];
  return {
    code: e.code,
    message: e.rawMessage,
    reason: info?.reason,
    domain: info?.domain,
    fields: Object.fromEntries(
      e
        .findDetails(BadRequestSchema)
        .flatMap((d) => d.fieldViolations.map((v) => [v.field, v.description])),
    ),
    retryDelay: retry ? Number(retry.seconds) + retry.nanos / 1e9 : undefined,
    resource: resource && { type: resource.resourceType, name: resource.resourceName },
  };
}

/** The failure of a call that must fail. */
export async function failure(call: Promise<unknown>): Promise<Failure> {
  return call.then(
    () => {
      throw new Error("the call succeeded");
    },
    (e: unknown) => failureOf(e),
  );
}
