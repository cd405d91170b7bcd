import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import type { HealthReport } from "../lifecycle/health.ts";

// `/metrics` on METRICS_PORT only (docs/design.md, "Operations"): a plain node:http server, not a route
// of the public Fastify app, so no proxy rule or route mistake can expose it on PORT, and a
// scrape never competes with the public routes' hooks, limits and rate limits. `/health` here is
// readiness with its details (the SMSC, binds, counters, errors), which PORT's `/health` keeps
// from strangers.

export interface MetricsServer {
  /** http://host:port of the listener. */
  url: string;
  close(): Promise<void>;
}

export async function serveMetrics(
  registry: Registry,
  port: number,
  host: string,
  health?: () => Promise<HealthReport>,
): Promise<MetricsServer> {
  const server = http.createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (request.method === "GET" && path === "/health" && health) {
      health().then(
        (report) =>
          response
            .writeHead(report.failing ? 503 : 200, { "content-type": "application/json" })
            .end(JSON.stringify(report)),
        (error: unknown) =>
          response.writeHead(500, { "content-type": "text/plain" }).end(`${String(error)}\n`),
      );
      return;
    }
    if (request.method !== "GET" || path !== "/metrics") {
      const paths = health ? "GET /metrics and GET /health" : "GET /metrics";
      response.writeHead(404, { "content-type": "text/plain" }).end(`only ${paths} here\n`);
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
