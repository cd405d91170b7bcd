import type { HandlerContext } from "@connectrpc/connect";
import { READ_BODY } from "./call-requests.ts";
import { reportParseFailuresAsInvalid } from "./parse-failures.ts";

/**
 * Runs on Connect, gRPC and gRPC-Web calls once their headers are in, before any byte of the body
 * is read (the library's requestGate): `authenticate` refuses a caller without valid credentials,
 * who so gets UNAUTHENTICATED having sent nothing we read. Then a Connect unary body is read.
 */
export function rpcRequestGate(authenticate: (ctx: HandlerContext) => Promise<void>) {
  return async (ctx: HandlerContext): Promise<void> => {
    reportParseFailuresAsInvalid(ctx);
    await authenticate(ctx);
    // Connect unary (JSON or binary): read and parsed here, off the main thread when large
    // (call-requests.ts).
    await ctx.values.get(READ_BODY)?.();
  };
}
