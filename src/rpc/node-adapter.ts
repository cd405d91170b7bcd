import { Code, ConnectError, type ConnectRouter, createConnectRouter } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import {
  type ConnectNodeAdapterOptions,
  compressionBrotli,
  compressionGzip,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import type { NodeRequest, NodeResponse } from "./guarded-bodies.ts";
import {
  type JsonCall,
  takesUnaryJsonPath,
  type UnaryJsonOptions,
  unaryJsonHandlers,
} from "./unary-json-calls.ts";

// Both ports' Connect adapters, in place of connect-node's connectNodeAdapter (GRPC_PORT) and
// connect-fastify's plugin (PORT): the same routing and answers, but each call's universal
// request comes from `prepare` (call-requests.ts), which the libraries' adapters build themselves
// from the node request with no hook for its body.

type Prepare = (request: NodeRequest, response: NodeResponse) => UniversalServerRequest;
type RouterOptions = Omit<ConnectNodeAdapterOptions, "contextValues" | "fallback">;

function handlersOf(options: RouterOptions): UniversalHandler[] {
  const router: ConnectRouter = createConnectRouter({
    ...options,
    acceptCompression: options.acceptCompression ?? [compressionGzip, compressionBrotli],
  });
  options.routes(router);
  return router.handlers;
}

async function serve(
  handler: UniversalHandler,
  universal: UniversalServerRequest,
  response: NodeResponse,
  log: Pick<FastifyBaseLogger, "error">,
): Promise<void> {
  try {
    await universalResponseToNodeResponse(await handler(universal), response);
  } catch (reason) {
    if (ConnectError.from(reason).code === Code.Aborted) return;
    log.error(
      { err: reason },
      `handler for rpc ${handler.method.name} of ${handler.service.typeName} failed`,
    );
  }
}

/** GRPC_PORT's request listener: routes by path, 404 for any other. */
export function nodeAdapter(options: RouterOptions, prepare: Prepare, log: FastifyBaseLogger) {
  const handlers = new Map(handlersOf(options).map((handler) => [handler.requestPath, handler]));
  return (request: NodeRequest, response: NodeResponse): void => {
    const handler = handlers.get(request.url?.split("?", 2)[0] ?? "");
    if (!handler) {
      response.statusCode = 404;
      response.end();
      return;
    }
    void serve(handler, prepare(request, response), response, log);
  };
}

/** Connect's content types, whose bodies connect-es reads itself. */
const CONNECT_TYPES = [
  "application/json",
  "application/proto",
  /^application\/connect\+/,
  /^application\/grpc/,
];

/**
 * PORT's Connect routes, in `scope` (which they take the JSON and proto parsers of). With `json`,
 * unary calls with a JSON body take the fast path (unary-json-calls.ts).
 */
export function fastifyAdapter(
  scope: FastifyInstance,
  options: RouterOptions & Pick<UnaryJsonOptions, "requestGate" | "interceptors">,
  prepare: Prepare,
  json?: { call: (request: NodeRequest, response: NodeResponse) => JsonCall | undefined },
) {
  for (const type of CONNECT_TYPES) {
    scope.addContentTypeParser(type, (_request, _payload, done) => done(null, undefined));
  }
  const fast = json && unaryJsonHandlers(options);
  for (const handler of handlersOf(options)) {
    const fastHandler = fast?.get(handler.requestPath);
    scope.all(handler.requestPath, async (request, reply) => {
      // Headers set on the reply (by hooks) go out with the answer, written raw.
      const headers = reply.getHeaders();
      for (const name in headers) {
        const value = headers[name];
        if (value !== undefined) reply.raw.setHeader(name, value);
      }
      const call =
        fastHandler && takesUnaryJsonPath(request.raw) && json?.call(request.raw, reply.raw);
      if (fastHandler && call) {
        try {
          await fastHandler(request.raw, reply.raw, call);
        } catch (reason) {
          request.log.error(
            { err: reason },
            `handler for rpc ${handler.method.name} of ${handler.service.typeName} failed`,
          );
        }
        return;
      }
      await serve(handler, prepare(request.raw, reply.raw), reply.raw, request.log);
    });
  }
}
