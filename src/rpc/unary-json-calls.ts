import type { ServerResponse } from "node:http";
import { create, type DescMethod, type DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { compressionNegotiate, mergeNonProtocolHeaders } from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  errorToJsonBytes,
  parseContentType,
  trailerMux,
} from "@connectrpc/connect/protocol-connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { NodeRequest, NodeResponse } from "./guarded-bodies.ts";
import { answerWriter } from "./json-answers.ts";
import { NodeRequestHeaders } from "./node-request-headers.ts";

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
  /** Reads the body through its checks: the request message (INVALID_ARGUMENT if none). */
  read: () => Promise<unknown>;
}

const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];
/** connect-es's default: answers smaller than this are not compressed. */
const COMPRESS_MIN_BYTES = 1024;
const encoder = new TextEncoder();

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
    const writeAnswer = answerWriter(method.output);
    handlers.set(path, async (request, response, call) => {
      const context = new CallContext(method, request, response, call.values);
      let status = 200;
      // A string answer goes out with its head in one write of one buffer, as Fastify's do;
      // bytes would go as a second chunk of a writev (node's http: head and body apart).
      let body: string | Uint8Array;
      try {
        // As connect-es: the gate before any byte of the body is read.
        await options.requestGate(context);
        const input = await call.read();
        const answer = await invokeUnary(context, impl, input, options.interceptors);
        try {
          // toJsonString's text with protobuf-es's write defaults (connect-es's JSON options
          // only change reading), written by a compiled writer (json-answers.ts).
          body = writeAnswer(answer as never);
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
        context.done();
      }
      let length = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
      if (length >= COMPRESS_MIN_BYTES) {
        const compression = compressionNegotiate(
          ACCEPT_COMPRESSION,
          null,
          context.requestHeader.get("accept-encoding"),
          "Accept-Encoding",
        );
        if (compression.response) {
          body = await compression.response.compress(
            typeof body === "string" ? encoder.encode(body) : body,
          );
          length = body.byteLength;
          context.responseHeader.set("content-encoding", compression.response.name);
        }
      }
      // Head and body in one write.
      (response as ServerResponse).writeHead(status, context.answerHeaders(length));
      response.end(body);
    });
  }
  return handlers;
}

/**
 * A call's HandlerContext, what connect-es's createHandlerContext makes, but with what most calls
 * never read made only when read (issue 43): the request headers read from node's
 * (node-request-headers.ts), the response headers and trailers, the signal and its listener on
 * the response, the URL.
 */
class CallContext implements HandlerContext {
  readonly service: DescService;
  readonly requestMethod = "POST";
  readonly protocolName = "connect";
  readonly requestHeader: Headers;
  private header: Headers | undefined;
  private trailer: Headers | undefined;
  private controller: AbortController | undefined;
  private onClose: (() => void) | undefined;

  constructor(
    readonly method: DescMethod,
    private readonly request: NodeRequest,
    private readonly response: NodeResponse,
    readonly values: ContextValues,
  ) {
    this.service = method.parent;
    this.requestHeader = new NodeRequestHeaders(request.headers);
  }

  get url(): string {
    return `http://${this.request.headers.host ?? ""}${this.request.url ?? ""}`;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      // Aborted when the client goes before the answer is out, as connect-es's.
      const controller = new AbortController();
      const response = this.response;
      const onClose = () => {
        if (!response.writableFinished) controller.abort();
      };
      this.controller = controller;
      this.onClose = onClose;
      if (response.closed) onClose();
      else response.once("close", onClose);
    }
    return this.controller.signal;
  }

  /** No timeout: a call with one takes connect-es's path. Reads no `this`, as callers may not. */
  timeoutMs(): undefined {
    return undefined;
  }

  get responseHeader(): Headers {
    this.header ??= new Headers({ "content-type": "application/json" });
    return this.header;
  }

  get responseTrailer(): Headers {
    this.trailer ??= new Headers();
    return this.trailer;
  }

  /** The call is answered: the signal no longer follows the response. */
  done(): void {
    if (this.onClose) this.response.off("close", this.onClose);
  }

  /** The answer's headers for node's writeHead, trailers merged as connect-es does. */
  answerHeaders(length: number): Record<string, string | string[]> {
    const lengthValue = String(length);
    if (!this.header && !(this.trailer && hasEntries(this.trailer))) {
      // As the fetch Headers below would give them: in order of name.
      return { "content-length": lengthValue, "content-type": "application/json" };
    }
    // Without trailers (the usual answer) the answer's headers need no merged copy.
    const header =
      this.trailer && hasEntries(this.trailer)
        ? trailerMux(this.responseHeader, this.trailer)
        : this.responseHeader;
    header.set("content-length", lengthValue);
    const out: Record<string, string | string[]> = {};
    header.forEach((value, name) => {
      out[name] = name === "set-cookie" ? header.getSetCookie() : value;
    });
    return out;
  }
}

/**
 * connect-es's invokeUnaryImplementation, without reading the context's lazy parts: the request
 * the interceptors see reads the context's signal and headers when they do, and the handler gets
 * the context itself unless an interceptor replaced the request's parts (then a merged copy, as
 * connect-es makes for every call).
 */
async function invokeUnary(
  context: CallContext,
  impl: UnaryHandler,
  input: unknown,
  interceptors: Interceptor[],
): Promise<unknown> {
  const method = context.method;
  const request = new CallRequest(context, input);
  let own: CallResponse | undefined;
  let next: UnaryFn = async (req) => {
    const ctx = req === request && !request.changed ? context : mergedContext(context, req);
    own = new CallResponse(context, create(method.output, (await impl(req.message, ctx)) as never));
    return own as never;
  };
  for (let i = interceptors.length - 1; i >= 0; i--) {
    next = (interceptors[i] as Interceptor)(next as never) as unknown as UnaryFn;
  }
  const response = (await next(request as never)) as unknown as UnaryResponse;
  if (response !== own || own.changed) {
    copyHeaders(response.header, context.responseHeader);
    copyHeaders(response.trailer, context.responseTrailer);
  }
  return response.message;
}

type UnaryFn = (request: UnaryRequest) => Promise<UnaryResponse>;

/** What a call's request and answer share as interceptors see them: the call's method, unary. */
abstract class CallPart {
  readonly stream = false;
  /** An interceptor set a part of it: the call takes the parts as set. */
  changed = false;

  constructor(
    protected readonly context: CallContext,
    public message: unknown,
  ) {}

  get method(): DescMethod {
    return this.context.method;
  }
  get service(): DescService {
    return this.context.service;
  }
}

/** What an interceptor gets: connect-es's unary request, its signal and headers the context's. */
class CallRequest extends CallPart {
  readonly requestMethod = "POST";
  private values: {
    signal?: AbortSignal;
    header?: Headers;
    contextValues?: ContextValues;
    url?: string;
  } = {};

  get url(): string {
    return this.values.url ?? this.context.url;
  }
  set url(url: string) {
    this.changed = true;
    this.values.url = url;
  }
  get signal(): AbortSignal {
    return this.values.signal ?? this.context.signal;
  }
  set signal(signal: AbortSignal) {
    this.changed = true;
    this.values.signal = signal;
  }
  get header(): Headers {
    return this.values.header ?? this.context.requestHeader;
  }
  set header(header: Headers) {
    this.changed = true;
    this.values.header = header;
  }
  get contextValues(): ContextValues {
    return this.values.contextValues ?? this.context.values;
  }
  set contextValues(values: ContextValues) {
    this.changed = true;
    this.values.contextValues = values;
  }
}

/** What the handler answers, as interceptors get it: its headers and trailers the context's. */
class CallResponse extends CallPart {
  private replaced: { header?: Headers; trailer?: Headers } = {};

  get header(): Headers {
    return this.replaced.header ?? this.context.responseHeader;
  }
  set header(header: Headers) {
    this.changed = true;
    this.replaced.header = header;
  }
  get trailer(): Headers {
    return this.replaced.trailer ?? this.context.responseTrailer;
  }
  set trailer(trailer: Headers) {
    this.changed = true;
    this.replaced.trailer = trailer;
  }
}

/** connect-es's mergeRequest: the context with the request's parts. */
function mergedContext(context: CallContext, req: UnaryRequest): HandlerContext {
  return {
    method: context.method,
    service: req.service,
    requestMethod: context.requestMethod,
    protocolName: context.protocolName,
    url: context.url,
    timeoutMs: context.timeoutMs,
    responseHeader: context.responseHeader,
    responseTrailer: context.responseTrailer,
    requestHeader: req.header,
    signal: req.signal,
    values: req.contextValues,
  };
}

/** connect-es's copyHeaders. */
function copyHeaders(from: Headers, to: Headers): void {
  if (from === to) return;
  to.forEach((_, key) => {
    to.delete(key);
  });
  from.forEach((value, key) => {
    to.set(key, value);
  });
}

function hasEntries(headers: Headers): boolean {
  return !headers.keys().next().done;
}
