import { Code, ConnectError, createConnectRouter } from "@connectrpc/connect";
import {
  type ConnectNodeAdapterOptions,
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { NodeRequest, NodeResponse } from "./guarded-bodies.ts";

/**
 * connect-node's connectNodeAdapter (GRPC_PORT), with each call's body from `body`
 * (guarded-bodies.ts): the library's adapter reads the request itself and offers no hook for it.
 * Otherwise the same: routes by path, 404 for any other, errors of a call logged.
 */
export function guardedNodeAdapter(
  options: ConnectNodeAdapterOptions,
  body: (request: NodeRequest, response: NodeResponse) => AsyncIterable<Uint8Array> | undefined,
) {
  const router = createConnectRouter({
    ...options,
    acceptCompression: options.acceptCompression ?? [compressionGzip, compressionBrotli],
  });
  options.routes(router);
  const handlers = new Map(router.handlers.map((handler) => [handler.requestPath, handler]));
  return (request: NodeRequest, response: NodeResponse): void => {
    const handler = handlers.get(request.url?.split("?", 2)[0] ?? "");
    if (!handler) {
      response.statusCode = 404;
      response.end();
      return;
    }
    const universal = universalRequestFromNodeRequest(
      request,
      response,
      // Typed as parsed JSON; connect-es reads an async iterable given there as the raw body.
      body(request, response) as never,
      options.contextValues?.(request),
    );
    handler(universal)
      .then((answer) => universalResponseToNodeResponse(answer, response))
      .catch((reason: unknown) => {
        if (ConnectError.from(reason).code === Code.Aborted) return;
        console.error(
          `handler for rpc ${handler.method.name} of ${handler.service.typeName} failed`,
          reason,
        );
      });
  };
}
