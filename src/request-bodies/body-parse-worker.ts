// A parsing worker of body-parse-pool.ts (piscina loads it; erasable TypeScript only, so that
// Node runs it as it is under tsx and vitest, and as the built .js in production). A task gets a
// port on which its body's chunks arrive as the main thread reads them, then END_OF_BODY.
import { getPriority, setPriority } from "node:os";
import type { MessagePort } from "node:worker_threads";
import {
  createFileRegistry,
  type DescMessage,
  fromBinary,
  type Registry,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { move } from "piscina";
import { decodeJson, decodeJsonObject, type KnownFields, keepKnown } from "./json-decoding.ts";

// This thread yields the CPU to the main thread's event loop when both want it: a parse of 96 MB
// takes about a second of CPU, which on a busy machine came out of the loop's share. Linux keeps
// a nice value per thread (elsewhere it is the whole process's, which must not change): ten
// below the thread that started it, never above it (root may raise it, and must not here).
if (process.platform === "linux") {
  try {
    setPriority(Math.min(19, getPriority() + 10));
  } catch {
    // left as it is where the system refuses
  }
}

/** The body is complete: parse it. */
export const END_OF_BODY = "end";
/** The body will not be complete (refused, or its client went away): drop it. */
export const END_OF_BODY_ABORTED = "aborted";

export type ParseResult<T> = { ok: true; value: T } | { ok: false; message: string };

/** A body's parse: JSON (the fields `known` kept), or binary protobuf of `typeName`. */
export type ParseTask =
  | { kind: "json"; known: KnownFields | undefined; plain?: boolean }
  | { kind: "proto"; typeName: string; descriptors: Uint8Array };

export default async function parse(
  task: ParseTask & { port: MessagePort },
): Promise<ParseResult<unknown> | Uint8Array> {
  const chunks = await receive(task.port);
  if (!chunks) return { ok: false, message: "the body was not received whole" };
  const bytes = Buffer.concat(chunks);
  chunks.length = 0;
  if (task.kind === "proto") return reencoded(bytes, task);
  const result = task.plain ? decodeJson(bytes) : decodeJsonObject(bytes);
  if (!result.ok || !task.known) return result;
  return { ok: true, value: keepKnown(result.value, task.known) };
}

/** The chunks that come on `port` until END_OF_BODY; undefined when the body was aborted. */
function receive(port: MessagePort): Promise<Uint8Array[] | undefined> {
  return new Promise((resolve) => {
    const chunks: Uint8Array[] = [];
    port.on("message", (message: Uint8Array | string) => {
      if (typeof message !== "string") {
        chunks.push(message);
        return;
      }
      port.close();
      resolve(message === END_OF_BODY ? chunks : undefined);
    });
    // Closed from the other side (its thread ended) before the end: nothing more will come.
    port.once("close", () => resolve(undefined));
  });
}

const registries = new Map<string, Registry>();

/**
 * The message decoded and encoded again without its unknown fields, moved to the main thread
 * (the result itself, not copied); a decoding error as the library words it ("parse binary: ").
 */
function reencoded(
  bytes: Uint8Array,
  task: { typeName: string; descriptors: Uint8Array },
): ParseResult<unknown> | Uint8Array {
  let registry = registries.get(task.typeName);
  if (!registry) {
    registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, task.descriptors));
    registries.set(task.typeName, registry);
  }
  const desc = registry.getMessage(task.typeName) as DescMessage;
  try {
    const message = fromBinary(desc, bytes, { readUnknownFields: false });
    return move(toBinary(desc, message)) as Uint8Array;
  } catch (error) {
    return { ok: false, message: `parse binary: ${(error as Error).message}` };
  }
}
