import type { HandlerContext } from "@connectrpc/connect";
import { reportParseFailuresAsInvalid } from "./parse-failures.ts";

/**
 * Runs on Connect, gRPC and gRPC-Web calls once their headers are in, before any byte of the body
 * is read (the library's requestGate): `authenticate` refuses a caller without valid credentials,
 * who so gets UNAUTHENTICATED having sent nothing we read.
 */
export function rpcRequestGate(authenticate: (ctx: HandlerContext) => Promise<void>) {
  return async (ctx: HandlerContext): Promise<void> => {
    reportParseFailuresAsInvalid(ctx);
    await authenticate(ctx);
  };
}
