// A parsing worker of json-parse-pool.ts (piscina loads it; erasable TypeScript only, so that
// Node runs it as it is under tsx and vitest, and as the built .js in production). A task gets a
// port on which its body's chunks arrive as the main thread reads them, then END_OF_BODY.
import type { MessagePort } from "node:worker_threads";
import {
  decodeJson,
  decodeJsonObject,
  type JsonObjectResult,
  type KnownFields,
  keepKnown,
} from "./json-decoding.ts";

/** The body is complete: parse it. */
export const END_OF_BODY = "end";
/** The body will not be complete (refused, or its client went away): drop it. */
export const END_OF_BODY_ABORTED = "aborted";

export default async function parse(task: {
  port: MessagePort;
  known?: KnownFields;
  plain?: boolean;
}): Promise<JsonObjectResult> {
  const chunks = await receive(task.port);
  if (!chunks) return { ok: false, message: "the body was not received whole" };
  const bytes = Buffer.concat(chunks);
  chunks.length = 0;
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
