// A parsing worker of json-parse-pool.ts (piscina loads it; erasable TypeScript only, so that
// Node runs it as it is under tsx and vitest, and as the built .js in production).
import {
  decodeJson,
  decodeJsonObject,
  type JsonObjectResult,
  type KnownFields,
  keepKnown,
} from "./json-decoding.ts";

export default function parse(task: {
  chunks: Uint8Array[];
  length: number;
  known?: KnownFields;
  plain?: boolean;
}): JsonObjectResult {
  const bytes = Buffer.concat(task.chunks, task.length);
  const result = task.plain ? decodeJson(bytes) : decodeJsonObject(bytes);
  if (!result.ok || !task.known) return result;
  return { ok: true, value: keepKnown(result.value, task.known) };
}
