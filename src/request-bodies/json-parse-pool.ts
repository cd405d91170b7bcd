import { availableParallelism } from "node:os";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { MessageChannel, type MessagePort } from "node:worker_threads";
import { Piscina } from "piscina";
import { LARGE_BODY_BOUNDS } from "../rate-limits/large-bodies.ts";
import {
  decodeJson,
  decodeJsonObject,
  type JsonObjectResult,
  type KnownFields,
} from "./json-decoding.ts";
import { END_OF_BODY, END_OF_BODY_ABORTED } from "./json-parse-worker.ts";

// JSON.parse of a large body blocks the thread it runs on for about 5 ms a MB (400-600 ms for the
// largest batch): bodies over 1 MiB are parsed in worker threads, and only what the route reads
// comes back (keepKnown), since copying a parsed value back to the main thread costs about as
// much as parsing it. Smaller bodies parse faster on the main thread than they would travel.
// A large body is not held here either: each chunk moves to its worker as it arrives (holding
// 90 MB of chunks made the main thread's collector stop the loop for 100-300 ms).

/** Bodies up to this many bytes are parsed on the main thread (about 5 ms at most). */
export const PARSE_ON_MAIN_THREAD_BYTES = 1024 * 1024;

// The worker module beside this one, .ts from the sources and .js once built.
const WORKER = new URL(
  `./json-parse-worker${extname(fileURLToPath(import.meta.url))}`,
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

export interface JsonParseOptions {
  /** The fields to keep from a worker's answer. */
  known: KnownFields | undefined;
  /** Any JSON value, without the REST rules (json-decoding.ts's decodeJson). */
  plain?: boolean;
}

/** Bodies streaming to or parsed by a worker now, until its task has ended (tests, metrics). */
let inWorkers = 0;
export function bodiesInWorkers(): number {
  return inWorkers;
}

/**
 * One body's parse (json-decoding.ts: as a REST body, or `plain` JSON), fed its chunks as they
 * arrive. Up to PARSE_ON_MAIN_THREAD_BYTES are kept here and parsed here; past that, a worker
 * task starts and every chunk moves to it as it is written (transferred, not copied), where the
 * body is joined and parsed. Call `end` once the body is complete, or `abort`.
 */
export class JsonBodyParse {
  private held: Buffer[] = [];
  private length = 0;
  private port: MessagePort | undefined;
  private result: Promise<JsonObjectResult> | undefined;

  constructor(private readonly options: JsonParseOptions) {}

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

  async end(): Promise<JsonObjectResult> {
    if (!this.port || !this.result) {
      const bytes = Buffer.concat(this.held, this.length);
      this.held = [];
      return this.options.plain ? decodeJson(bytes) : decodeJsonObject(bytes);
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

  private startWorker(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    inWorkers++;
    this.result = workers().run({ port: port2, ...this.options }, { transferList: [port2] });
    // Read by `end`; an aborted body's answer (or the worker's failure) is nobody's.
    this.result.then(
      () => inWorkers--,
      () => inWorkers--,
    );
    return port1;
  }
}

/** Moves `chunk` to the worker: a view of shared memory (a slice of a pooled buffer) is copied. */
function send(port: MessagePort, chunk: Buffer): void {
  const own = chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength;
  const bytes = own ? chunk : Buffer.from(chunk);
  port.postMessage(bytes, [bytes.buffer as ArrayBuffer]);
}
