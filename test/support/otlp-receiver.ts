/**
 * A small OTLP/HTTP trace receiver, in both encodings the service exports (protobuf, the default,
 * and JSON): collects the spans exported to POST /v1/traces, for the tracing tests, and how each
 * export was encoded.
 */
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { afterAll, beforeAll, expect } from "vitest";
import { startTracing, tracer } from "../../src/tracing/tracing.ts";
import { eventually } from "./fixtures.ts";

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
  /** The content type of every export received, in order. */
  encodings: string[];
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
  const encodings: string[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (request.method === "POST" && request.url === "/v1/traces") {
        const type = request.headers["content-type"] ?? "";
        encodings.push(type);
        const body = Buffer.concat(chunks);
        if (type === "application/x-protobuf") {
          spans.push(...protobufSpans(body));
          response.writeHead(200, { "content-type": type }).end();
          return;
        }
        spans.push(...jsonSpans(JSON.parse(body.toString("utf8"))));
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
    encodings,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

type JsonAttributes = { key: string; value: AnyValue }[];

/** The fields of an OTLP JSON request the tests read. */
interface JsonRequest {
  resourceSpans?: {
    resource?: { attributes?: JsonAttributes };
    scopeSpans?: {
      spans?: (Omit<ReceivedSpan, "attributes" | "service" | "parentSpanId"> & {
        parentSpanId?: string;
        attributes?: JsonAttributes;
      })[];
    }[];
  }[];
}

function jsonSpans(body: JsonRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
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
  return spans;
}

/**
 * For a test file: before its tests, a receiver and the process's tracing started to it, with the
 * OTEL_* variables `env` adds, set in the process's environment as an operator sets them (the
 * exporter reads them there); after them, tracing stopped, the receiver closed and the variables
 * removed.
 */
export function useTracingReceiver(env: Record<string, string> = {}): {
  otlp: OtlpReceiver;
  /** What startTracing returned: undefined if the variables left tracing off. */
  stopTracing?: () => Promise<void>;
} {
  const state = {} as ReturnType<typeof useTracingReceiver>;
  const variables = { ...env };
  beforeAll(async () => {
    state.otlp = await startOtlpReceiver();
    variables.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = state.otlp.tracesUrl;
    Object.assign(process.env, variables);
    state.stopTracing = startTracing(process.env);
  });
  // Registered first by a test file, so run last: after the file's own services have closed and
  // their spans were handed to the exporter.
  afterAll(async () => {
    await state.stopTracing?.();
    await state.otlp?.close();
    for (const name of Object.keys(variables)) delete process.env[name];
  });
  return state;
}

/**
 * Ends a failed carrier-submission span through the service's tracer and checks that `otlp`
 * received every field of it, in `encoding` (its content type).
 */
export async function expectSpanExported(otlp: OtlpReceiver, encoding: string): Promise<void> {
  const span = tracer().startSpan("carrier submit", {
    kind: SpanKind.CLIENT,
    attributes: { "sms.carrier": "simulator", "sms.message_id": 42 },
  });
  span.setStatus({ code: SpanStatusCode.ERROR, message: "refused" });
  span.end();
  const { traceId, spanId } = span.spanContext();
  await eventually(async () => otlp.spans.some((s) => s.spanId === spanId), 2_500);
  expect(otlp.spans.find((s) => s.spanId === spanId)).toMatchObject({
    traceId,
    kind: SpanKind.CLIENT + 1, // OTLP's SpanKind counts from UNSPECIFIED = 0
    attributes: { "sms.carrier": "simulator", "sms.message_id": 42 },
    status: { code: SpanStatusCode.ERROR, message: "refused" },
    service: "sms-service",
  });
  expect(new Set(otlp.encodings)).toEqual(new Set([encoding]));
}

// OTLP's protobuf messages, read field by field (opentelemetry-proto, trace/v1 and common/v1):
// only the fields the tests look at; the others are skipped.

/** Calls `field` for each field of the message in `bytes`; unread fields are skipped. */
function readFields(bytes: Uint8Array, field: (no: number, reader: BinaryReader) => boolean): void {
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    if (!field(no, reader)) reader.skip(wireType, no);
  }
}

function protobufSpans(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  // ExportTraceServiceRequest.resource_spans = 1
  readFields(body, (no, reader) => {
    if (no !== 1) return false;
    let service = "";
    const scopes: Uint8Array[] = [];
    // ResourceSpans.resource = 1 (Resource.attributes = 1), scope_spans = 2
    readFields(reader.bytes(), (field, inner) => {
      if (field === 1) {
        readFields(inner.bytes(), (attribute, kv) => {
          if (attribute !== 1) return false;
          const [key, value] = keyValue(kv.bytes());
          if (key === "service.name") service = String(value);
          return true;
        });
        return true;
      }
      if (field === 2) {
        scopes.push(inner.bytes());
        return true;
      }
      return false;
    });
    for (const scope of scopes) {
      // ScopeSpans.spans = 2
      readFields(scope, (field, inner) => {
        if (field !== 2) return false;
        spans.push({ ...protobufSpan(inner.bytes()), service });
        return true;
      });
    }
    return true;
  });
  return spans;
}

function protobufSpan(bytes: Uint8Array): Omit<ReceivedSpan, "service"> {
  const span: Omit<ReceivedSpan, "service"> = {
    traceId: "",
    spanId: "",
    parentSpanId: "",
    name: "",
    kind: 0,
    attributes: {},
    status: {},
  };
  const hex = (id: Uint8Array) => Buffer.from(id).toString("hex");
  readFields(bytes, (no, reader) => {
    switch (no) {
      case 1:
        span.traceId = hex(reader.bytes());
        return true;
      case 2:
        span.spanId = hex(reader.bytes());
        return true;
      case 4:
        span.parentSpanId = hex(reader.bytes());
        return true;
      case 5:
        span.name = reader.string();
        return true;
      case 6:
        span.kind = reader.int32();
        return true;
      case 9: {
        const [key, value] = keyValue(reader.bytes());
        span.attributes[key] = value;
        return true;
      }
      case 15:
        // Status.message = 2, code = 3
        readFields(reader.bytes(), (field, status) => {
          if (field === 2) span.status.message = status.string();
          else if (field === 3) span.status.code = status.int32();
          else return false;
          return true;
        });
        return true;
      default:
        return false;
    }
  });
  return span;
}

/** KeyValue (key = 1, value = 2) with an AnyValue of string (1), bool (2) or int (3). */
function keyValue(bytes: Uint8Array): [string, unknown] {
  let key = "";
  let value: unknown;
  readFields(bytes, (no, reader) => {
    if (no === 1) key = reader.string();
    else if (no === 2)
      readFields(reader.bytes(), (kind, any) => {
        if (kind === 1) value = any.string();
        else if (kind === 2) value = any.bool();
        else if (kind === 3) value = Number(any.int64());
        else return false;
        return true;
      });
    else return false;
    return true;
  });
  return [key, value];
}
