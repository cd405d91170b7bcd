import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

// `/metrics` on METRICS_PORT only (design, "Operations"): a plain node:http server, not a route
// of the public Fastify app, so no proxy rule or route mistake can expose it on PORT, and a
// scrape never competes with the public routes' hooks, limits and rate limits.

export interface MetricsServer {
  /** http://host:port of the listener. */
  url: string;
  close(): Promise<void>;
}

export async function serveMetrics(
  registry: Registry,
  port: number,
  host: string,
): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (request.method !== "GET" || path !== "/metrics") {
      response.writeHead(404, { "content-type": "text/plain" }).end("only GET /metrics here\n");
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
      (error: unknown) =>
        response.writeHead(500, { "content-type": "text/plain" }).end(`${String(error)}\n`),
    );
  });
  server.listen(port, host);
  await once(server, "listening");
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
