import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createConnectRouter,
  createContextKey,
} from "@connectrpc/connect";
import type { UniversalServerRequest } from "@connectrpc/connect/protocol";
import { universalRequestFromNodeRequest } from "@connectrpc/connect-node";
import { clientAddress, fromAddress } from "../rate-limits/client-address.ts";
import type { LargeBodySlots } from "../rate-limits/large-bodies.ts";
import { type KnownFields, keepKnown } from "../request-bodies/json-decoding.ts";
import { JsonBodyParse } from "../request-bodies/json-parse-pool.ts";
import { guardedBody, type NodeRequest, type NodeResponse } from "./guarded-bodies.ts";
import { knownFieldsOfMessage, replaceBody } from "./json-requests.ts";
import { readMaxBytesOf } from "./read-limits.ts";

// A call as both ports hand it to connect-es: its body checked as it arrives (guarded-bodies.ts)
// and, for Connect unary JSON, read and parsed by the request gate instead (json-requests.ts).

/** Set on Connect unary JSON calls: reads and parses the body; the request gate runs it. */
export const READ_JSON_BODY = createContextKey<(() => Promise<void>) | undefined>(undefined, {
  description: "reads a Connect unary JSON body ahead of connect-es",
});

export function rpcRequests(deps: {
  slots: LargeBodySlots;
  batchReadMaxBytes: number;
  routes: (router: ConnectRouter) => void;
}) {
  const router = createConnectRouter();
  deps.routes(router);
  const inputs = new Map(router.handlers.map((h) => [h.requestPath, h.method.input]));
  const known = new Map<string, KnownFields>();
  for (const [path, input] of inputs) known.set(path, knownFieldsOfMessage(input));

  /** The universal request of a call from `address`, with the call's context values. */
  return (
    request: NodeRequest,
    response: NodeResponse,
    address: string | undefined,
  ): UniversalServerRequest => {
    const path = request.url?.split("?")[0] ?? "";
    const body = guardedBody(request, response, {
      slots: deps.slots,
      address: clientAddress(address),
      readMaxBytes: readMaxBytesOf(path, deps.batchReadMaxBytes),
      input: inputs.get(path),
    });
    const values: ContextValues = fromAddress(address);
    // connect-es reads an async iterable given as the parsed body like its own stream.
    const universal = universalRequestFromNodeRequest(request, response, body as never, values);
    const fields = known.get(path);
    if (body?.wholeJson && fields) {
      values.set(READ_JSON_BODY, async () => {
        // Each scanned chunk goes on to the parse: a large body to its worker as it arrives.
        const parse = new JsonBodyParse({ known: fields, plain: true });
        try {
          await body.readWhole((chunk) => parse.write(chunk));
        } catch (error) {
          parse.abort();
          throw error;
        }
        const result = await parse.end();
        if (!result.ok) throw new ConnectError(result.message, Code.InvalidArgument);
        // A worker's answer holds the known fields only; a body parsed here is pruned alike.
        const value = parse.inWorker ? result.value : keepKnown(result.value, fields);
        replaceBody(universal, value);
      });
    }
    return universal;
  };
}
