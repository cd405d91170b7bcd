import { parseContentType as connectType } from "@connectrpc/connect/protocol-connect";
import { parseContentType as grpcType } from "@connectrpc/connect/protocol-grpc";
import { parseContentType as grpcWebType } from "@connectrpc/connect/protocol-grpc-web";
import type { FastifyInstance } from "fastify";

// On PORT the Connect paths share the server with REST. A request there that is no Connect, gRPC
// or gRPC-Web call (another method, another content type) would get the library's bare 405 or
// 415 with an empty body; it is refused here first, in the spec's error shape like every answer
// of PORT. Every method of ours is unary; a GET carrying Connect's GET parameters is a Connect
// call (the read-only methods allow it) and is left to the library.

const ACCEPTED =
  "Connect takes application/json or application/proto, gRPC-Web application/grpc-web+proto or application/grpc-web+json, gRPC application/grpc";

function isRpcContentType(type: string | null): boolean {
  const connect = connectType(type);
  if (connect) return !connect.stream;
  const web = grpcWebType(type);
  if (web) return !web.text;
  return grpcType(type) !== undefined;
}

/** Adds the check to `scope`, the encapsulated scope the Connect plugin is registered in. */
export function refuseForeignRequests(scope: FastifyInstance): void {
  // A callback, not a promise: it runs on every call (issue 43).
  scope.addHook("onRequest", (request, reply, done) => {
    if (request.method === "GET" && /[?&]encoding=/.test(request.url)) return done();
    if (request.method !== "POST") {
      const path = request.url.split("?")[0];
      return reply
        .code(405)
        .header("allow", "POST")
        .type("application/json")
        .send({ errors: { request: [`${path} is a Connect/gRPC method: use POST`] } });
    }
    const type = request.headers["content-type"];
    if (!isRpcContentType(type ?? null)) {
      const message = type
        ? `cannot parse a body of content type ${type}: ${ACCEPTED}`
        : `the body has no content type: ${ACCEPTED}`;
      return reply
        .code(415)
        .type("application/json")
        .send({ errors: { request: [message] } });
    }
    done();
  });
}
