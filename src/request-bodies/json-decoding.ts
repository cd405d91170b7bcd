import { isUtf8 } from "node:buffer";
import secureJson from "secure-json-parse";
import { isWellFormedUnicode } from "../domain/unicode-text.ts";

// A REST JSON body from its bytes to the object the routes validate, the same on the main thread
// and in the parsing workers (body-parse-pool.ts): text must be valid UTF-8, never silently
// repaired with U+FFFD; JSON can still smuggle in what UTF-8 cannot carry, a `\ud800` escape of a
// lone surrogate, which is refused too, since storing it would turn it into U+FFFD. `__proto__`
// and `constructor.prototype` keys are dropped like any unknown parameter: nothing in a body can
// reach an object's prototype. Only erasable TypeScript here: workers load it without a loader.

export type JsonObjectResult = { ok: true; value: unknown } | { ok: false; message: string };

/**
 * `keepNulls`: for the few small bodies where `null` means "clear this setting" (docs/design.md
 * "Money": `PATCH /account/spend-controls`); everywhere else a null parameter is absent.
 */
export function decodeJsonObject(
  bytes: Uint8Array,
  options: { keepNulls?: boolean } = {},
): JsonObjectResult {
  if (!isUtf8(bytes)) return { ok: false, message: "the body is not valid UTF-8" };
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  if (text.trim() === "") return { ok: false, message: "the body is not valid JSON: it is empty" };
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, {
      protoAction: "remove",
      constructorAction: "remove",
    });
  } catch (error) {
    return { ok: false, message: `the body is not valid JSON: ${(error as Error).message}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, message: "the body must be a JSON object" };
  }
  if (SURROGATE_ESCAPE.test(text) && !stringsAreUnicode(value)) {
    return {
      ok: false,
      message: "the body is not valid UTF-8 text: it escapes a lone surrogate",
    };
  }
  if (options.keepNulls) return { ok: true, value };
  return { ok: true, value: withoutNulls(value as Record<string, unknown>) };
}

/**
 * Any JSON value, with none of the REST rules: for Connect, whose decoder (protobuf-es's fromJson)
 * has rules of its own. Not UTF-8 is decoded with U+FFFD, as connect-es's TextDecoder does.
 */
export function decodeJson(bytes: Uint8Array): JsonObjectResult {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, message: `the body is not valid JSON: ${(error as Error).message}` };
  }
}

/**
 * JSON encoders commonly write an unset optional field as `null`: a null parameter is taken as
 * absent, in the body and in the objects of a top-level array (the messages of a batch). A
 * required parameter that is null is then reported as missing ("cannot be empty").
 */
function withoutNulls(body: Record<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(body)) {
    const value = body[key];
    if (value === null) delete body[key];
    else if (Array.isArray(value)) {
      // for…in rather than Object.entries: no array per message of a 10000-message batch.
      for (const item of value) {
        if (item === null || typeof item !== "object" || Array.isArray(item)) continue;
        const fields = item as Record<string, unknown>;
        for (const field in fields) if (fields[field] === null) delete fields[field];
      }
    }
  }
  return body;
}

/** A `\uD800`-`\uDFFF` escape: only bodies holding one need the walk below. */
const SURROGATE_ESCAPE = /\\u[dD][89abcdefABCDEF]/;

/** Iterative: a body nested deep must not overflow the stack. */
function stringsAreUnicode(root: unknown): boolean {
  const pending: unknown[] = [root];
  while (pending.length > 0) {
    const value = pending.pop();
    if (typeof value === "string") {
      if (!isWellFormedUnicode(value)) return false;
    } else if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) {
        if (!isWellFormedUnicode(key)) return false;
        pending.push(item);
      }
    }
  }
  return true;
}

/**
 * The parameters a route reads: the `properties` and `items` of its body's JSON Schema, or of a
 * protobuf message's JSON form; `any`: kept whole (a map, a google.protobuf.Struct).
 */
export interface KnownFields {
  properties?: Record<string, KnownFields>;
  items?: KnownFields;
  any?: true;
}

/** The known fields of a JSON Schema (plain data: it goes to the workers). */
export function knownFieldsOf(schema: unknown): KnownFields | undefined {
  if (schema === null || typeof schema !== "object") return undefined;
  const { properties, items } = schema as { properties?: object; items?: unknown };
  const known: KnownFields = {};
  if (properties) {
    known.properties = {};
    for (const [name, inner] of Object.entries(properties)) {
      known.properties[name] = knownFieldsOf(inner) ?? {};
    }
  }
  const inner = knownFieldsOf(items);
  if (inner) known.items = inner;
  return known;
}

/**
 * Drops what the route ignores anyway (unknown parameters are ignored, docs/decisions.md) before a
 * worker's answer is copied to the main thread: copying costs about as much as parsing did, and
 * a body's bulk may be in fields nobody reads. Known objects keep their own keys only; an object
 * or array where the schema has no properties or items becomes an empty one, refused for its type
 * as the original would be.
 */
export function keepKnown(value: unknown, known: KnownFields): unknown {
  if (value === null || typeof value !== "object" || known.any) return value;
  // Where the schema expects a scalar, an object or array is refused for its type alone.
  if (!known.items && !known.properties) return Array.isArray(value) ? [] : {};
  if (Array.isArray(value)) {
    const items = known.items;
    return items ? value.map((item) => keepKnown(item, items)) : [];
  }
  if (!known.properties) return {};
  const kept: Record<string, unknown> = {};
  const fields = value as Record<string, unknown>;
  for (const [name, inner] of Object.entries(known.properties)) {
    if (Object.hasOwn(fields, name)) kept[name] = keepKnown(fields[name], inner);
  }
  return kept;
}
