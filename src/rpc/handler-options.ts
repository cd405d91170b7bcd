import type { ConnectRouter, HandlerContext, Interceptor } from "@connectrpc/connect";
import { RPC_READ_MAX_BYTES } from "../domain/limits.ts";
import { withReadLimits } from "./read-limits.ts";
import { rpcRequestGate } from "./request-gate.ts";

/**
 * The options both Connect adapters get (rpc/node-adapter.ts, on GRPC_PORT and PORT):
 * read limits per method, and the request gate. A fresh object each time: adapters modify theirs.
 */
export function rpcHandlerOptions(opts: {
  routes: (router: ConnectRouter) => void;
  batchReadMaxBytes: number;
  authenticate: (ctx: HandlerContext) => Promise<void>;
  /** Run around every call (metrics). */
  interceptors?: Interceptor[];
}) {
  return {
    routes: withReadLimits(opts.routes, opts.batchReadMaxBytes),
    readMaxBytes: RPC_READ_MAX_BYTES,
    requestGate: rpcRequestGate(opts.authenticate),
    interceptors: opts.interceptors ?? [],
  };
}
