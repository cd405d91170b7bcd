import type { Readable } from "node:stream";

// Reading a request body ourselves, chunk by chunk, instead of letting Fastify collect it: each
// chunk is checked as it arrives (size, the body's shape, a slot for a large body), and the first
// check that fails ends the read there. The stream is paused: the rest of the body is never read,
// and the answer closes the connection (Fastify sets Connection: close after a parser's error).

export interface BodyReadOptions {
  /** Bytes the route takes at most. */
  limit: number;
  /** Content-Length, when the request declared one. */
  declaredLength: number | undefined;
  /** The error for a body over `limit`. */
  tooLarge: () => Error;
  /** The error for a body that ended before or after its Content-Length. */
  wrongLength: () => Error;
  /** Looks at each chunk as it arrives (a shape scanner); throws to end the read. */
  inspect?: (chunk: Buffer, received: number) => void;
  /** Takes each chunk once checked, instead of keeping it (a large body is not held). */
  take?: (chunk: Buffer) => void;
}

/** The whole body (its chunks, unless `take` took them), or the first error of a check. */
export function readBody(
  stream: Readable,
  options: BodyReadOptions,
): Promise<{ chunks: Buffer[]; length: number }> {
  const { limit, declaredLength } = options;
  return new Promise((resolve, reject) => {
    if (declaredLength !== undefined && declaredLength > limit) {
      reject(options.tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = () => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      stream.off("error", onError);
      stream.off("close", onClose);
    };
    const fail = (error: Error) => {
      stop();
      stream.pause();
      reject(error);
    };
    function onData(chunk: Buffer | string) {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      received += bytes.length;
      if (received > limit) return fail(options.tooLarge());
      try {
        options.inspect?.(bytes, received);
      } catch (error) {
        return fail(error as Error);
      }
      if (options.take) options.take(bytes);
      else chunks.push(bytes);
    }
    function onEnd() {
      stop();
      if (declaredLength !== undefined && received !== declaredLength) {
        reject(options.wrongLength());
        return;
      }
      resolve({ chunks, length: received });
    }
    function onError(error: Error & { statusCode?: number }) {
      stop();
      if (!(typeof error.statusCode === "number" && error.statusCode >= 400)) {
        error.statusCode = 400;
      }
      reject(error);
    }
    // Closed before its end without an error: the body will never be complete.
    function onClose() {
      onError(new Error("the request closed before its body was complete"));
    }
    stream.on("data", onData);
    stream.on("end", onEnd);
    stream.on("error", onError);
    stream.on("close", onClose);
    stream.resume();
  });
}
