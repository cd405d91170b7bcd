import type { HandlerContext } from "@connectrpc/connect";
import { READ_BODY } from "./call-requests.ts";
import { reportParseFailuresAsInvalid } from "./parse-failures.ts";

/** application/json, application/connect+json, application/grpc(-web)+json, with parameters. */
const JSON_TYPE = /^application\/(?:(?:connect|grpc|grpc-web)\+)?json(?:;|$)/i;

/**
 * Runs on Connect, gRPC and gRPC-Web calls once their headers are in, before any byte of the body
 * is read (the library's requestGate): `authenticate` refuses a caller without valid credentials,
 * who so gets UNAUTHENTICATED having sent nothing we read. Then a Connect unary body is read.
 */
export function rpcRequestGate(authenticate: (ctx: HandlerContext) => Promise<void>) {
  return async (ctx: HandlerContext): Promise<void> => {
    // Only a binary body's decoding fails as INTERNAL: a JSON call needs no listener (issue 43).
    if (!JSON_TYPE.test(ctx.requestHeader.get("content-type") ?? "")) {
      reportParseFailuresAsInvalid(ctx);
    }
    await authenticate(ctx);
    // Connect unary (JSON or binary): read and parsed here, off the main thread when large
    // (call-requests.ts).
    await ctx.values.get(READ_BODY)?.();
  };
}
