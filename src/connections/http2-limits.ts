// Bounds on GRPC_PORT (HTTP/2 cleartext), the same as PORT's where HTTP/2 has the same thing: a
// new connection must open its first stream within the headers timeout (a bare TCP connection, or
// one that sent only the preface, is closed then), a connection with no stream open closes after
// the keep-alive timeout, a request body may not pause longer than the body idle timeout nor take
// longer than the request timeout in all (its stream is reset), streams per connection are
// bounded by SETTINGS_MAX_CONCURRENT_STREAMS and connections by the cap. Counted in open streams,
// not in frames: PINGs do not keep an idle connection open.
import http2 from "node:http2";
import type { ConnectionLimits } from "../config/config.ts";

/** Options for `http2.createServer`. */
export function http2ServerOptions(limits: ConnectionLimits): http2.ServerOptions {
  return {
    // Node's default is 2^32 - 1 streams at once on one connection.
    settings: { maxConcurrentStreams: limits.maxStreamsPerConnection },
  };
}

/** The idle and request bounds and the connection cap, on a server made with the options above. */
export function limitHttp2(server: http2.Http2Server, limits: ConnectionLimits): void {
  server.maxConnections = limits.maxConnections;
  server.on("session", (session) => {
    let open = 0;
    let idle: NodeJS.Timeout | undefined;
    const closeAfter = (ms: number) => {
      idle = setTimeout(() => {
        // GOAWAY, then the socket closes (no stream is open to finish).
        if (open === 0 && !session.closed && !session.destroyed) session.close();
      }, ms).unref();
    };
    closeAfter(limits.headersTimeoutMs);
    session.on("stream", (stream) => {
      open++;
      clearTimeout(idle);
      boundRequest(stream, limits);
      stream.once("close", () => {
        open--;
        if (open === 0) closeAfter(limits.keepAliveTimeoutMs);
      });
    });
    session.once("close", () => clearTimeout(idle));
  });
}

function boundRequest(stream: http2.ServerHttp2Stream, limits: ConnectionLimits): void {
  if (stream.endAfterHeaders) return;
  const cancel = () => {
    if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
  };
  stream.setTimeout(limits.bodyIdleTimeoutMs, cancel);
  const whole = setTimeout(cancel, limits.requestTimeoutMs).unref();
  // The whole body has arrived (and been read): what follows is the call's, bounded by its deadline.
  stream.once("end", () => {
    stream.setTimeout(0);
    clearTimeout(whole);
  });
  stream.once("close", () => clearTimeout(whole));
}
