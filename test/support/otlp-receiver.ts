/**
 * A small OTLP/HTTP trace receiver (JSON encoding, as @opentelemetry/exporter-trace-otlp-http
 * sends it): collects the spans exported to POST /v1/traces, for the tracing tests.
 */
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  service: string;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port>/v1/traces */
  tracesUrl: string;
  spans: ReceivedSpan[];
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean };

function attributeMap(list: { key: string; value: AnyValue }[] | undefined) {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) {
    out[key] =
      value.stringValue ??
      (value.intValue !== undefined ? Number(value.intValue) : value.boolValue);
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (request.method === "POST" && request.url === "/v1/traces") {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = String(attributeMap(resourceSpans.resource?.attributes)["service.name"]);
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? "",
                name: span.name,
                kind: span.kind,
                attributes: attributeMap(span.attributes),
                status: span.status ?? {},
                service,
              });
            }
          }
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      } else response.writeHead(404).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    tracesUrl: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
