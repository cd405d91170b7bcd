import type { ServerResponse } from "node:http";
import { type DescMethod, fromJson, toJsonString } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createMethodImplSpec,
  type HandlerContext,
  type Interceptor,
} from "@connectrpc/connect";
import {
  compressionNegotiate,
  getJsonOptions,
  invokeUnaryImplementation,
  mergeNonProtocolHeaders,
} from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  errorToJsonBytes,
  parseContentType,
  trailerMux,
} from "@connectrpc/connect/protocol-connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { NodeRequest, NodeResponse } from "./guarded-bodies.ts";

// Connect unary calls with a JSON body (POST, `application/json`, no request compression or
// timeout header) on PORT, served without connect-es's universal handler: the same request gate,
// interceptors, service implementation, error bodies and compression, but without what that
// handler pays per call for being general (two URL parses, the request headers copied twice
// into fetch Headers, three abort controllers and the DOMException of the one aborted at every
// call's end, the answer as an async iterable written in two writes): issue 43, what it saves is
// in docs/benchmarks.md (figure 1). Every other call (binary, streaming, GET, compressed, with a
// timeout) goes through connect-es as before.

type UnaryHandler = (request: unknown, context: HandlerContext) => unknown;

/** What a fast call needs that the node adapter's options hold. */
export interface UnaryJsonOptions {
  routes: (router: ConnectRouter) => void;
  requestGate: (ctx: HandlerContext) => Promise<void>;
  interceptors: Interceptor[];
}

/** The parts of a prepared call the fast path reads (call-requests.ts). */
export interface JsonCall {
  values: ContextValues;
  /** Reads the body through its checks: the parsed JSON, known fields only. */
  read: () => Promise<unknown>;
}

const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];
/** connect-es's default: answers smaller than this are not compressed. */
const COMPRESS_MIN_BYTES = 1024;
const encoder = new TextEncoder();
/** connect-es's JSON options for answers (unknown fields ignored, the rest the defaults). */
const JSON_OPTIONS = getJsonOptions(undefined);

/** Whether a call with these headers takes the fast path (else connect-es serves it). */
export function takesUnaryJsonPath(request: NodeRequest): boolean {
  if (request.method !== "POST") return false;
  const headers = request.headers;
  const type = headers["content-type"];
  if (type === undefined) return false;
  const parsed = parseContentType(type);
  if (!parsed || parsed.stream || parsed.binary) return false;
  const encoding = headers["content-encoding"];
  if (encoding !== undefined && encoding !== "identity") return false;
  return headers["connect-timeout-ms"] === undefined;
}

/**
 * The fast path's handlers, by request path: each serves one call and writes its answer (the
 * same status, headers and body connect-es's Connect protocol handler writes).
 */
export function unaryJsonHandlers(options: UnaryJsonOptions) {
  const impls = new Map<string, { method: DescMethod; impl: UnaryHandler }>();
  const register = (method: DescMethod, impl: UnaryHandler) => {
    if (method.methodKind === "unary") {
      impls.set(`/${method.parent.typeName}/${method.name}`, { method, impl });
    }
  };
  // The routes as registered (read-limits.ts registers each method on its own).
  const collector = {
    service(service: { methods: DescMethod[] }, impl: Record<string, UnaryHandler>) {
      for (const method of service.methods) {
        const handler = impl[method.localName];
        if (handler) register(method, handler.bind(impl));
      }
      return collector;
    },
    rpc(method: DescMethod, impl: UnaryHandler) {
      register(method, impl);
      return collector;
    },
    handlers: [],
  };
  options.routes(collector as unknown as ConnectRouter);

  const handlers = new Map<
    string,
    (request: NodeRequest, response: NodeResponse, call: JsonCall) => Promise<void>
  >();
  for (const [path, { method, impl }] of impls) {
    const spec = createMethodImplSpec(method, impl as never);
    handlers.set(path, async (request, response, call) => {
      const headers = request.headers;
      const requestHeader = new Headers();
      for (const [name, value] of Object.entries(headers)) {
        if (name.startsWith(":") || value === undefined) continue;
        if (Array.isArray(value)) for (const v of value) requestHeader.append(name, v);
        else requestHeader.append(name, value);
      }
      const controller = new AbortController();
      const onClose = () => {
        if (!response.writableFinished) controller.abort();
      };
      response.once("close", onClose);
      const context: HandlerContext = {
        service: method.parent,
        method,
        requestMethod: "POST",
        protocolName: "connect",
        url: `http://${headers.host ?? ""}${request.url ?? ""}`,
        signal: controller.signal,
        timeoutMs: () => undefined,
        requestHeader,
        responseHeader: new Headers({ "content-type": "application/json" }),
        responseTrailer: new Headers(),
        values: call.values,
      };
      const compression = compressionNegotiate(
        ACCEPT_COMPRESSION,
        null,
        requestHeader.get("accept-encoding"),
        "Accept-Encoding",
      );
      let status = 200;
      // A string answer goes out with its head in one write of one buffer, as Fastify's do;
      // bytes would go as a second chunk of a writev (node's http: head and body apart).
      let body: string | Uint8Array;
      try {
        // As connect-es: the gate before any byte of the body is read.
        await options.requestGate(context);
        const json = await call.read();
        let input: unknown;
        try {
          input = fromJson(method.input, json as never);
        } catch (error) {
          throw ConnectError.from(error, Code.InvalidArgument);
        }
        const output = await invokeUnaryImplementation(
          spec as never,
          context,
          input as never,
          options.interceptors,
        );
        try {
          body = toJsonString(method.output, output as never, JSON_OPTIONS);
        } catch (error) {
          throw ConnectError.from(error, Code.Internal);
        }
      } catch (error) {
        const answer =
          error instanceof ConnectError
            ? error
            : new ConnectError("internal error", Code.Internal, undefined, undefined, error);
        status = codeToHttpStatus(answer.code);
        context.responseHeader.set("content-type", "application/json");
        if (!answer.isWireError) mergeNonProtocolHeaders(context.responseHeader, answer.metadata);
        body = errorToJsonBytes(answer, {});
      } finally {
        response.off("close", onClose);
      }
      let length = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
      if (compression.response && length >= COMPRESS_MIN_BYTES) {
        body = await compression.response.compress(
          typeof body === "string" ? encoder.encode(body) : body,
        );
        length = body.byteLength;
        context.responseHeader.set("content-encoding", compression.response.name);
      }
      // Without trailers (the usual answer) the answer's headers need no merged copy.
      const header = hasEntries(context.responseTrailer)
        ? trailerMux(context.responseHeader, context.responseTrailer)
        : context.responseHeader;
      header.set("content-length", String(length));
      const out: Record<string, string | string[]> = {};
      header.forEach((value, name) => {
        out[name] = name === "set-cookie" ? header.getSetCookie() : value;
      });
      // Head and body in one write.
      (response as ServerResponse).writeHead(status, out);
      response.end(body);
    });
  }
  return handlers;
}

function hasEntries(headers: Headers): boolean {
  return !headers.keys().next().done;
}
