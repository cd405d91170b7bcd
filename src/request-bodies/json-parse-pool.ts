import { availableParallelism } from "node:os";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Piscina } from "piscina";
import {
  decodeJson,
  decodeJsonObject,
  type JsonObjectResult,
  type KnownFields,
} from "./json-decoding.ts";

// JSON.parse of a large body blocks the thread it runs on for about 5 ms a MB (400-600 ms for the
// largest batch): bodies over 1 MiB are parsed in worker threads, and only what the route reads
// comes back (keepKnown), since copying a parsed value back to the main thread costs about as
// much as parsing it. Smaller bodies parse faster on the main thread than they would travel.

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
    idleTimeout: 60_000,
    // A worker over this heap ends with an error; the service goes on.
    resourceLimits: { maxOldGenerationSizeMb: 1024 },
  });
  return pool;
}

/**
 * The body, in the chunks it came in (each from body-reading.ts's ownChunk), parsed (json-decoding.ts: as a REST
 * body, or `plain` JSON); off the main thread when it is large, where the chunks are joined too
 * (joining 90 MB took 155 ms): `known` are the fields to keep from a worker's answer.
 */
export async function parseJsonBody(
  chunks: Buffer[],
  length: number,
  options: { known: KnownFields | undefined; plain?: boolean },
): Promise<JsonObjectResult> {
  if (length <= PARSE_ON_MAIN_THREAD_BYTES) {
    const bytes = Buffer.concat(chunks, length);
    return options.plain ? decodeJson(bytes) : decodeJsonObject(bytes);
  }
  const task = { chunks, length, ...options };
  try {
    // The chunks move to the worker without a copy.
    return await workers().run(task, {
      transferList: chunks.map((chunk) => chunk.buffer as ArrayBuffer),
    });
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_WORKER_OUT_OF_MEMORY") {
      return { ok: false, message: "the body takes more memory to parse than the server allows" };
    }
    throw error;
  }
}
