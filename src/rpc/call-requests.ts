import { fromJson } from "@bufbuild/protobuf";
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
import { JsonBodyParse, ProtoBodyParse } from "../request-bodies/body-parse-pool.ts";
import { type KnownFields, keepKnown } from "../request-bodies/json-decoding.ts";
import {
  type GuardedBody,
  guardedBody,
  type NodeRequest,
  type NodeResponse,
} from "./guarded-bodies.ts";
import { plainInputReader } from "./json-inputs.ts";
import { knownFieldsOfMessage, replaceBody } from "./json-requests.ts";
import { readMaxBytesOf } from "./read-limits.ts";
import type { JsonCall } from "./unary-json-calls.ts";

// A call as both ports hand it to connect-es: its body checked as it arrives (guarded-bodies.ts)
// and, for Connect unary calls (JSON or binary), read and parsed by the request gate instead
// (json-requests.ts).

/** Set on Connect unary calls: reads and parses the body; the request gate runs it. */
export const READ_BODY = createContextKey<(() => Promise<void>) | undefined>(undefined, {
  description: "reads a Connect unary body ahead of connect-es",
});

/** Reads `body` through its checks into `parse`, each chunk as it is scanned. */
async function readInto<P extends JsonBodyParse | ProtoBodyParse>(
  body: GuardedBody,
  parse: P,
): Promise<P> {
  try {
    await body.readWhole((chunk) => parse.write(chunk));
  } catch (error) {
    parse.abort();
    throw error;
  }
  return parse;
}

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
  const plainReaders = new Map([...inputs].map(([path, input]) => [path, plainInputReader(input)]));

  /**
   * A Connect unary JSON call from `address` for the fast path (unary-json-calls.ts): its context
   * values and the reader of its body's message, through the same checks and decoding as
   * `prepare`'s and connect-es's; undefined for a path whose body is not read here.
   */
  const jsonCall = (
    request: NodeRequest,
    response: NodeResponse,
    address: string | undefined,
  ): JsonCall | undefined => {
    const path = request.url?.split("?")[0] ?? "";
    const fields = known.get(path);
    if (!fields) return undefined;
    const body = guardedBody(request, response, {
      slots: deps.slots,
      address: clientAddress(address),
      readMaxBytes: readMaxBytesOf(path, deps.batchReadMaxBytes),
      input: inputs.get(path),
    });
    const input = inputs.get(path);
    const plain = plainReaders.get(path);
    if (body?.whole !== "json" || !input || !plain) return undefined;
    return {
      values: fromAddress(address),
      read: async () => {
        const parse = await readInto(body, new JsonBodyParse({ known: fields, plain: true }));
        const result = await parse.end();
        if (!result.ok) throw new ConnectError(result.message, Code.InvalidArgument);
        // A worker's answer holds the known fields only; a body parsed here, read as it is when
        // it sets plain fields only (json-inputs.ts), else pruned alike.
        const message = parse.inWorker ? undefined : plain(result.value);
        if (message) return message;
        try {
          return fromJson(
            input,
            (parse.inWorker ? result.value : keepKnown(result.value, fields)) as never,
          );
        } catch (error) {
          throw ConnectError.from(error, Code.InvalidArgument);
        }
      },
    };
  };

  /** The universal request of a call from `address`, with the call's context values. */
  const prepare = (
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
    const input = inputs.get(path);
    if (body?.whole === "json" && fields) {
      values.set(READ_BODY, async () => {
        const parse = await readInto(body, new JsonBodyParse({ known: fields, plain: true }));
        const result = await parse.end();
        if (!result.ok) throw new ConnectError(result.message, Code.InvalidArgument);
        // A worker's answer holds the known fields only; a body parsed here is pruned alike.
        const value = parse.inWorker ? result.value : keepKnown(result.value, fields);
        replaceBody(universal, value);
      });
    } else if (body?.whole === "binary" && input) {
      values.set(READ_BODY, async () => {
        // connect-es decodes the bytes given, on the main thread: a large body's worker has
        // dropped its unknown fields (and the library never allocates its Content-Length).
        const result = await (await readInto(body, new ProtoBodyParse(input))).end();
        if (!result.ok) throw new ConnectError(result.message, Code.InvalidArgument);
        replaceBody(universal, result.value);
      });
    }
    return universal;
  };
  return Object.assign(prepare, { jsonCall });
}
