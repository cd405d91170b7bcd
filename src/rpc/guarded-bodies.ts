import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Transform } from "node:stream";
import { createBrotliDecompress, createGunzip } from "node:zlib";
import type { DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { LargeBodySlots } from "../rate-limits/large-bodies.ts";
import { ProtoBodyParse } from "../request-bodies/body-parse-pool.ts";
import type { ParseResult } from "../request-bodies/body-parse-worker.ts";
import { JsonShapeScanner } from "../request-bodies/json-shape.ts";
import { ProtobufShapeScanner } from "../request-bodies/protobuf-shape.ts";
import { BODY_SHAPE_LIMITS } from "../request-bodies/shape-limits.ts";

// The body of a Connect, gRPC or gRPC-Web call as connect-es reads it, after the request gate, with
// checks as the bytes arrive (connect-es reads a JSON message whole, then JSON.parse blocks the
// loop for as long as it takes: 2 to 12 s for 16 MB of nested arrays in a field it then ignores):
// - every call over 1 MiB takes a slot of LargeBodySlots, or is refused before more is read;
// - each message (Connect's whole body, gRPC and gRPC-Web's envelopes), inflated when compressed,
//   goes through a shape scanner, JSON (json-shape.ts) or binary (protobuf-shape.ts): nesting or
//   values past the limits are INVALID_ARGUMENT there, and the rest is never read.

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

type Framing = "whole" | "enveloped";

/** How a call's messages are framed and encoded, from its content type; undefined: not scanned. */
function codecOf(contentType: string | undefined): { framing: Framing; json: boolean } | undefined {
  const type = contentType?.split(";")[0]?.trim().toLowerCase() ?? "";
  if (type === "application/json") return { framing: "whole", json: true };
  if (type === "application/proto") return { framing: "whole", json: false };
  const grpc = /^application\/grpc(?:-web)?(?:\+(proto|json))?$/.exec(type);
  if (grpc) return { framing: "enveloped", json: grpc[1] === "json" };
  return undefined;
}

type Scanner = { feed(chunk: Uint8Array): string | undefined };

function header(request: NodeRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The body to hand connect-es (as `universalRequestFromNodeRequest`'s parsed body, which it reads
 * like its own), or undefined for a call without one. `readMaxBytes`: the method's read limit,
 * which bounds what is decompressed here too.
 */
export function guardedBody(
  request: NodeRequest,
  response: NodeResponse,
  deps: {
    slots: LargeBodySlots;
    address: string | undefined;
    readMaxBytes: number;
    /** The method's request message, for binary bodies. */
    input: DescMessage | undefined;
  },
): GuardedBody | undefined {
  if (request.method !== "POST") return undefined;
  const codec = codecOf(header(request, "content-type"));
  const input = deps.input;
  const scanner: (() => Scanner) | undefined = codec?.json
    ? () => new JsonShapeScanner(BODY_SHAPE_LIMITS)
    : input && (() => new ProtobufShapeScanner(input, BODY_SHAPE_LIMITS));
  const encoding =
    codec?.framing === "whole"
      ? header(request, "content-encoding")
      : header(request, "grpc-encoding");
  const declared = header(request, "content-length");
  const whole = codec?.framing === "whole" ? (codec.json ? "json" : "binary") : undefined;
  // Binary gRPC messages are parsed here as they arrive and handed on parsed (Messages).
  const reparse =
    codec?.framing === "enveloped" && !codec.json && input
      ? () => new ProtoBodyParse(input)
      : undefined;
  const messages =
    codec && scanner
      ? new Messages(
          codec.framing,
          scanner,
          encoding?.trim().toLowerCase(),
          deps.readMaxBytes,
          reparse,
        )
      : undefined;
  return new GuardedBody(request, response, whole, {
    ...deps,
    // Envelopes' sizes are connect-es's to check, one by one; a whole body's are checked here too.
    rawLimit: codec?.framing === "enveloped" ? Number.POSITIVE_INFINITY : deps.readMaxBytes,
    messages,
    declaredLength: declared === undefined ? undefined : Number(declared),
  });
}

export class GuardedBody implements AsyncIterable<Uint8Array> {
  constructor(
    private readonly request: NodeRequest,
    private readonly response: NodeResponse,
    /** A Connect unary body, JSON or binary: one message, read (inflated) by readWhole(). */
    readonly whole: "json" | "binary" | undefined,
    private readonly options: CheckOptions,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return checkedChunks(this.request, this.response, this.options);
  }

  /**
   * Reads the body through the checks, handing its message's chunks, inflated, to `take` as they
   * are scanned (`whole` bodies: a large one goes on to its parsing worker, never held here).
   */
  async readWhole(take: (chunk: Buffer) => void): Promise<void> {
    const messages = this.options.messages;
    if (messages) messages.take = take;
    // An uncompressed body is read from the stream's events: its async iterator and this class's
    // generator cost a promise and several turns per chunk (issue 43). Same checks, same order.
    if (this.whole && messages?.plainWhole) {
      await readPlainWhole(this.request, this.response, this.options, messages);
      return;
    }
    for await (const _ of this) {
      // the chunks went to `take`
    }
  }
}

interface CheckOptions {
  slots: LargeBodySlots;
  address: string | undefined;
  readMaxBytes: number;
  rawLimit: number;
  messages: Messages | undefined;
  declaredLength: number | undefined;
}

async function* checkedChunks(
  request: NodeRequest,
  response: NodeResponse,
  options: CheckOptions,
): AsyncGenerator<Uint8Array> {
  if ((options.declaredLength ?? 0) > options.rawLimit) throw tooLarge(options.readMaxBytes);
  const slot = options.slots.forBody(options.address, options.declaredLength);
  response.once("close", slot.release);
  const messages = options.messages;
  // Read by hand: a for-await that ends early would destroy the request, and with it the socket
  // the answer is to go out on. What is left unread stays unread; HTTP/1.1 closes after the answer.
  const source = request[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let complete = false;
  try {
    let received = 0;
    for (;;) {
      const next = await source.next();
      if (next.done) break;
      received += next.value.length;
      if (received > options.rawLimit) throw tooLarge(options.readMaxBytes);
      slot.admit(received);
      await messages?.write(next.value);
      if (!messages?.reencodes) yield next.value;
      else for (const parsed of messages.parsed()) yield* envelope(await parsed);
    }
    await messages?.end();
    complete = true;
  } finally {
    if (!complete) messages?.abort();
    if (!complete && !("stream" in request) && !response.headersSent) {
      (response as ServerResponse).setHeader("connection", "close");
    }
  }
}

/** `checkedChunks` for a whole body that needs no inflating, read from the stream's events. */
async function readPlainWhole(
  request: NodeRequest,
  response: NodeResponse,
  options: CheckOptions,
  messages: Messages,
): Promise<void> {
  if ((options.declaredLength ?? 0) > options.rawLimit) throw tooLarge(options.readMaxBytes);
  const slot = options.slots.forBody(options.address, options.declaredLength);
  response.once("close", slot.release);
  try {
    await new Promise<void>((resolve, reject) => {
      let received = 0;
      const stop = () => {
        request.off("data", onData);
        request.off("end", onEnd);
        request.off("error", onError);
        request.off("close", onClose);
      };
      const fail = (error: unknown) => {
        stop();
        request.pause();
        reject(error);
      };
      function onData(chunk: Buffer) {
        try {
          received += chunk.length;
          if (received > options.rawLimit) throw tooLarge(options.readMaxBytes);
          slot.admit(received);
          messages.writeWhole(chunk);
        } catch (error) {
          fail(error);
        }
      }
      function onEnd() {
        stop();
        resolve();
      }
      function onError(error: Error) {
        fail(error);
      }
      function onClose() {
        if (!request.readableEnded)
          fail(new Error("the request closed before its body was complete"));
      }
      request.on("data", onData);
      request.on("end", onEnd);
      request.on("error", onError);
      request.on("close", onClose);
      request.resume();
    });
    await messages.end();
  } catch (error) {
    messages.abort();
    if (!("stream" in request) && !response.headersSent) {
      (response as ServerResponse).setHeader("connection", "close");
    }
    throw error;
  }
}

/** A message as connect-es reads it from gRPC: a 5-byte envelope header, uncompressed. */
function* envelope(parsed: ParseResult<Uint8Array>): Generator<Uint8Array> {
  if (!parsed.ok) throw new ConnectError(parsed.message, Code.InvalidArgument);
  const header = Buffer.alloc(5);
  header.writeUInt32BE(parsed.value.byteLength, 1);
  yield header;
  yield parsed.value;
}

/**
 * The messages of a body, each scanned as its bytes arrive (inflated first if need be). Binary
 * gRPC messages are also parsed as they arrive (`reparse`), a large one in a worker, so that
 * connect-es gets each one whole and without its unknown fields instead of its raw bytes: it
 * would allocate an envelope's declared length at its header, then join and decode it here.
 */
/** An envelope's header before its first byte (never written to: replaced by concat). */
const NO_HEADER = Buffer.alloc(0);

class Messages {
  private message: Message | undefined;
  private header = NO_HEADER;
  /** Bytes of the current envelope's message still to come. */
  private remaining = 0;
  /** Takes the scanned chunks of a whole body (GuardedBody.readWhole). */
  take: ((chunk: Buffer) => void) | undefined;
  /** The parse of the current envelope's message, and the messages parsed, in order. */
  private parse: ProtoBodyParse | undefined;
  private done: Promise<ParseResult<Uint8Array>>[] = [];

  constructor(
    private readonly framing: Framing,
    private readonly scanner: () => Scanner,
    private readonly encoding: string | undefined,
    private readonly readMaxBytes: number,
    private readonly reparse: (() => ProtoBodyParse) | undefined,
  ) {}

  /** Whether the body is handed on as parsed messages (`parsed`) rather than as it came. */
  get reencodes(): boolean {
    return this.reparse !== undefined;
  }

  /** A whole body that needs no inflating: its chunks can be written as they come (writeWhole). */
  get plainWhole(): boolean {
    return this.framing === "whole" && inflaterFor(this.encoding) === undefined;
  }

  /** A chunk of a plain whole body (plainWhole), scanned at once; throws the first violation. */
  writeWhole(chunk: Buffer): void {
    this.message ??= this.newMessage(this.encoding);
    this.message.writePlain(chunk);
  }

  /** The messages whose bytes are all in since the last call, each once parsed. */
  parsed(): Promise<ParseResult<Uint8Array>>[] {
    const done = this.done;
    this.done = [];
    return done;
  }

  /** The body ends unfinished: the message being parsed is dropped. */
  abort(): void {
    this.parse?.abort();
    this.parse = undefined;
  }

  async write(chunk: Buffer): Promise<void> {
    if (this.framing === "whole") {
      this.message ??= this.newMessage(this.encoding);
      return this.message.write(chunk);
    }
    // Envelopes: a flags byte (bit 0: compressed), a 4-byte big-endian length, the message.
    let offset = 0;
    while (offset < chunk.length) {
      if (this.message && this.remaining > 0) {
        const part = chunk.subarray(offset, offset + this.remaining);
        offset += part.length;
        this.remaining -= part.length;
        await this.message.write(part);
        if (this.remaining === 0) await this.finishMessage();
        continue;
      }
      const need = 5 - this.header.length;
      this.header = Buffer.concat([this.header, chunk.subarray(offset, offset + need)]);
      offset += Math.min(need, chunk.length - offset);
      if (this.header.length < 5) return;
      const flags = this.header.readUInt8(0);
      this.remaining = this.header.readUInt32BE(1);
      this.header = NO_HEADER;
      // As connect-es refuses it at the header (it no longer sees the header of a parsed one).
      if (this.remaining > this.readMaxBytes) {
        throw new ConnectError(
          `message size ${this.remaining} is larger than configured readMaxBytes ${this.readMaxBytes}`,
          Code.ResourceExhausted,
        );
      }
      this.message = this.newMessage(flags & 1 ? this.encoding : undefined);
      if (this.remaining === 0) await this.finishMessage();
    }
  }

  async end(): Promise<void> {
    if (this.framing === "whole") await this.message?.end();
  }

  private newMessage(encoding: string | undefined): Message {
    const parse = this.reparse?.();
    this.parse = parse;
    const take = parse ? (chunk: Buffer) => parse.write(chunk) : this.take;
    return new Message(this.scanner(), encoding, this.readMaxBytes, take);
  }

  private async finishMessage(): Promise<void> {
    await this.message?.end();
    this.message = undefined;
    if (this.parse) this.done.push(this.parse.end());
    this.parse = undefined;
  }
}

/** One message: its bytes, inflated when compressed, through a shape scanner. */
class Message {
  private readonly inflater: Transform | undefined;
  private inflated = 0;
  private failure: ConnectError | undefined;

  constructor(
    private readonly scanner: Scanner,
    encoding: string | undefined,
    private readonly readMaxBytes: number,
    private readonly take: ((chunk: Buffer) => void) | undefined,
  ) {
    this.inflater = inflaterFor(encoding);
    this.inflater?.on("data", (chunk: Buffer) => this.scan(chunk));
    // Bytes that do not inflate are for connect-es to refuse, as it does today.
    this.inflater?.on("error", () => {});
  }

  /** A chunk of a message that needs no inflating. */
  writePlain(chunk: Buffer): void {
    this.scan(chunk);
    this.throwFailure();
  }

  async write(chunk: Buffer): Promise<void> {
    if (!this.inflater) this.scan(chunk);
    else if (!this.inflater.destroyed) {
      await new Promise<void>((resolve) => this.inflater?.write(chunk, () => resolve()));
    }
    this.throwFailure();
  }

  async end(): Promise<void> {
    const inflater = this.inflater;
    if (inflater && !inflater.destroyed) {
      await new Promise<void>((resolve) => {
        inflater.once("end", resolve);
        inflater.once("close", resolve);
        inflater.end();
      });
    }
    this.throwFailure();
  }

  private scan(bytes: Buffer): void {
    if (this.failure) return;
    this.inflated += bytes.length;
    if (this.inflated > this.readMaxBytes) {
      this.fail(tooLarge(this.readMaxBytes));
      return;
    }
    const violation = this.scanner.feed(bytes);
    if (violation) this.fail(new ConnectError(violation, Code.InvalidArgument));
    else this.take?.(bytes);
  }

  private fail(error: ConnectError): void {
    this.failure = error;
    this.inflater?.destroy();
  }

  private throwFailure(): void {
    if (this.failure) throw this.failure;
  }
}

function inflaterFor(encoding: string | undefined): Transform | undefined {
  if (encoding === "gzip") return createGunzip();
  if (encoding === "br") return createBrotliDecompress();
  return undefined;
}

function tooLarge(readMaxBytes: number): ConnectError {
  return new ConnectError(
    `message is larger than configured readMaxBytes ${readMaxBytes}`,
    Code.ResourceExhausted,
  );
}
