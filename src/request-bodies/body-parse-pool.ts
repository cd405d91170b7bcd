import { availableParallelism } from "node:os";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { MessageChannel, type MessagePort } from "node:worker_threads";
import { create, type DescFile, type DescMessage, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Piscina } from "piscina";
import { LARGE_BODY_BOUNDS } from "../rate-limits/large-bodies.ts";
import {
  END_OF_BODY,
  END_OF_BODY_ABORTED,
  type ParseResult,
  type ParseTask,
} from "./body-parse-worker.ts";
import { decodeJson, decodeJsonObject, type KnownFields } from "./json-decoding.ts";

// JSON.parse of a large body blocks the thread it runs on for about 5 ms a MB (400-600 ms for the
// largest batch): bodies over 1 MiB are parsed in worker threads, and only what the route reads
// comes back (keepKnown), since copying a parsed value back to the main thread costs about as
// much as parsing it. Smaller bodies parse faster on the main thread than they would travel.
// A large body is not held here either: each chunk moves to its worker as it arrives (holding
// 90 MB of chunks made the main thread's collector stop the loop for 100-300 ms). Binary
// protobuf alike: its worker decodes it and hands back the known fields only, encoded again.

/** Bodies up to this many bytes are parsed on the main thread (about 5 ms at most). */
export const PARSE_ON_MAIN_THREAD_BYTES = 1024 * 1024;

// The worker module beside this one, .ts from the sources and .js once built.
const WORKER = new URL(
  `./body-parse-worker${extname(fileURLToPath(import.meta.url))}`,
  import.meta.url,
).href;

let pool: Piscina | undefined;

function workers(): Piscina {
  pool ??= new Piscina({
    filename: WORKER,
    // Idle workers are stopped (and never keep the process alive): no thread waits for nothing.
    minThreads: 0,
    maxThreads: Math.max(1, Math.min(2, availableParallelism() - 1)),
    // A task waits for its body's chunks most of its time: every large body the slots let in
    // (rate-limits/large-bodies.ts) streams to a worker at once, however few workers there are.
    concurrentTasksPerWorker: LARGE_BODY_BOUNDS.total,
    idleTimeout: 60_000,
    // A worker over this heap ends with an error; the service goes on.
    resourceLimits: { maxOldGenerationSizeMb: 1024 },
  });
  return pool;
}

/** Bodies streaming to or parsed by a worker now, until its task has ended (tests, metrics). */
let inWorkers = 0;
export function bodiesInWorkers(): number {
  return inWorkers;
}

/**
 * One body's parse, fed its chunks as they arrive. Up to PARSE_ON_MAIN_THREAD_BYTES are kept
 * and parsed here; past that, a worker task starts and every chunk moves to it as it is written
 * (transferred, not copied), where the body is joined and parsed. Call `end` once the body is
 * complete, or `abort`.
 */
abstract class BodyParse<T> {
  private held: Buffer[] = [];
  private length = 0;
  private port: MessagePort | undefined;
  private result: Promise<ParseResult<T>> | undefined;

  /** Whether the body went to a worker (whose answer holds the known fields only). */
  get inWorker(): boolean {
    return this.port !== undefined;
  }

  write(chunk: Buffer): void {
    this.length += chunk.length;
    if (!this.port && this.length <= PARSE_ON_MAIN_THREAD_BYTES) {
      this.held.push(chunk);
      return;
    }
    const port = this.port ?? this.startWorker();
    for (const held of this.held) send(port, held);
    this.held = [];
    send(port, chunk);
  }

  async end(): Promise<ParseResult<T>> {
    if (!this.port || !this.result) {
      const bytes = Buffer.concat(this.held, this.length);
      this.held = [];
      return this.parseHere(bytes);
    }
    this.port.postMessage(END_OF_BODY);
    try {
      return await this.result;
    } catch (error) {
      if ((error as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY") {
        return { ok: false, message: "the body takes more memory to parse than the server allows" };
      }
      throw error;
    }
  }

  /** The body will not be complete: the worker drops what it has. */
  abort(): void {
    this.held = [];
    this.port?.postMessage(END_OF_BODY_ABORTED);
  }

  /** A small body, on the main thread. */
  protected abstract parseHere(bytes: Buffer): ParseResult<T>;

  /** What the worker is to do with the body. */
  protected abstract task(): ParseTask;

  /** A worker's answer as `end` gives it. */
  protected fromWorker(answer: unknown): ParseResult<T> {
    return answer as ParseResult<T>;
  }

  private startWorker(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    inWorkers++;
    const answer = workers().run({ ...this.task(), port: port2 }, { transferList: [port2] });
    answer.then(
      () => inWorkers--,
      () => inWorkers--,
    );
    this.result = answer.then((value) => this.fromWorker(value));
    // Read by `end`; an aborted body's answer (or the worker's failure) is nobody's.
    this.result.catch(() => {});
    return port1;
  }
}

/**
 * Moves `chunk` to the worker: one that is all of its memory as it is, a view of shared memory
 * (a slice of a pooled buffer) copied into memory of its own first (never from Buffer's pool).
 */
function send(port: MessagePort, chunk: Buffer): void {
  let bytes = chunk;
  if (chunk.byteOffset !== 0 || chunk.byteLength !== chunk.buffer.byteLength) {
    bytes = Buffer.allocUnsafeSlow(chunk.length);
    chunk.copy(bytes);
  }
  port.postMessage(bytes, [bytes.buffer as ArrayBuffer]);
}

/**
 * A JSON body (json-decoding.ts: as a REST body, or `plain` JSON); `known`: the fields to keep
 * from a worker's answer.
 */
export class JsonBodyParse extends BodyParse<unknown> {
  constructor(private readonly options: { known: KnownFields | undefined; plain?: boolean }) {
    super();
  }

  protected parseHere(bytes: Buffer): ParseResult<unknown> {
    return this.options.plain ? decodeJson(bytes) : decodeJsonObject(bytes);
  }

  protected task(): ParseTask {
    return { kind: "json", ...this.options };
  }
}

/**
 * A binary protobuf message of type `desc`, as bytes for the library to decode: a small one as
 * it came, a large one decoded by its worker and encoded again without its unknown fields (so
 * bytes nobody reads never reach the main thread), or the decoder's error.
 */
export class ProtoBodyParse extends BodyParse<Uint8Array> {
  constructor(private readonly desc: DescMessage) {
    super();
  }

  protected parseHere(bytes: Buffer): ParseResult<Uint8Array> {
    return { ok: true, value: bytes };
  }

  protected task(): ParseTask {
    return { kind: "proto", typeName: this.desc.typeName, descriptors: descriptorsOf(this.desc) };
  }

  protected override fromWorker(answer: unknown): ParseResult<Uint8Array> {
    return answer instanceof Uint8Array ? { ok: true, value: answer } : (answer as never);
  }
}

const descriptorSets = new WeakMap<DescMessage, Uint8Array>();

/** The files that declare `desc` and all they import, as a FileDescriptorSet for a worker. */
function descriptorsOf(desc: DescMessage): Uint8Array {
  let set = descriptorSets.get(desc);
  if (!set) {
    const files = new Set<DescFile>();
    const add = (file: DescFile) => {
      if (files.has(file)) return;
      for (const dependency of file.dependencies) add(dependency);
      files.add(file);
    };
    add(desc.file);
    const message = create(FileDescriptorSetSchema, { file: [...files].map((f) => f.proto) });
    set = toBinary(FileDescriptorSetSchema, message);
    descriptorSets.set(desc, set);
  }
  return set;
}
