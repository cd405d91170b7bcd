import http2 from "node:http2";
import type { Config } from "../config/config.ts";
import { http2ServerOptions, limitHttp2 } from "./http2-limits.ts";

export interface GrpcServer {
  server: http2.Http2Server;
  /** Stops taking connections and sends GOAWAY: in-flight streams finish, then each session closes. */
  close: () => Promise<void>;
}

/** The HTTP/2 cleartext port (gRPC and Connect), not listening yet. */
export function grpcServer(
  config: Config,
  handler: (request: http2.Http2ServerRequest, response: http2.Http2ServerResponse) => void,
): GrpcServer {
  const server = http2.createServer(http2ServerOptions(config.connections), handler);
  // Idle connections closed, request bodies bounded in time (connections/http2-limits.ts).
  limitHttp2(server, config.connections);
  // Open client sessions (idle HTTP/2 connections) would keep server.close() waiting forever.
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const session of sessions) session.close();
    }));
  return { server, close };
}
