import { isUtf8 } from "node:buffer";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { FORM_MAX_PARAMETERS } from "../domain/limits.ts";
import { isWellFormedUnicode } from "../domain/unicode-text.ts";

// Bodies are read as bytes and checked before decoding: text must be valid UTF-8, never silently
// repaired with U+FFFD. JSON can still smuggle in what UTF-8 cannot carry, a `\ud800` escape of a
// lone surrogate; that is refused too, since storing it would turn it into U+FFFD. Both parsers
// fail with a RequestParseError, rendered as errors.request.

export class RequestParseError extends Error {
  readonly statusCode = 400;
}

export const FORM = "application/x-www-form-urlencoded";

export function registerBodyParsers(app: FastifyInstance): void {
  // `__proto__` and `constructor.prototype` keys are dropped, like any unknown parameter: valid
  // JSON is read as JSON, and nothing in a body can reach an object's prototype.
  const parseJson = app.getDefaultJsonParser("remove", "remove");
  app.removeContentTypeParser(["application/json", "text/plain"]);

  app.addContentTypeParser(
    "application/json",
    { parseAs: "buffer" },
    (request: FastifyRequest, body: Buffer, done) => {
      if (!isUtf8(body)) {
        return done(new RequestParseError("the body is not valid UTF-8"), undefined);
      }
      const text = body.toString("utf8");
      parseJson(request, text, (error, value) => {
        if (error) {
          return done(
            new RequestParseError(`the body is not valid JSON: ${error.message}`),
            undefined,
          );
        }
        if (value === null || typeof value !== "object" || Array.isArray(value)) {
          return done(new RequestParseError("the body must be a JSON object"), undefined);
        }
        if (SURROGATE_ESCAPE.test(text) && !stringsAreUnicode(value)) {
          return done(
            new RequestParseError("the body is not valid UTF-8 text: it escapes a lone surrogate"),
            undefined,
          );
        }
        done(null, withoutNulls(value as Record<string, unknown>));
      });
    },
  );

  app.addContentTypeParser(FORM, { parseAs: "buffer" }, (_request, body: Buffer, done) => {
    try {
      done(null, parseForm(body));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
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

/** Iterative: a body nested thousands deep must not overflow the stack. */
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
 * application/x-www-form-urlencoded with strict percent-decoding: malformed escapes and escapes
 * that are not UTF-8 are errors. A repeated key becomes an array, which the schema then refuses
 * where one value belongs. Linear in the body: a repeated key is appended to, never copied, and
 * more than FORM_MAX_PARAMETERS pairs are refused before any is decoded.
 */
export function parseForm(body: Buffer): Record<string, string | string[]> {
  if (!isUtf8(body)) throw new RequestParseError("the body is not valid UTF-8");
  const fields: Record<string, string | string[]> = Object.create(null);
  const text = body.toString("utf8");
  if (text === "") return fields;
  const pairs = text.split("&", FORM_MAX_PARAMETERS + 1);
  if (pairs.length > FORM_MAX_PARAMETERS) {
    throw new RequestParseError(
      `the form has more than ${FORM_MAX_PARAMETERS} parameters; send at most ${FORM_MAX_PARAMETERS}`,
    );
  }
  for (const pair of pairs) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const key = decodeFormComponent(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? "" : decodeFormComponent(pair.slice(eq + 1));
    const previous = fields[key];
    if (previous === undefined) fields[key] = value;
    else if (Array.isArray(previous)) previous.push(value);
    else fields[key] = [previous, value];
  }
  // A plain object for the validator; spreading defines own keys, so a `__proto__` key stays a key.
  return { ...fields };
}

function decodeFormComponent(component: string): string {
  try {
    return decodeURIComponent(component.replaceAll("+", " "));
  } catch {
    throw new RequestParseError("the form parameters are not correctly percent-encoded UTF-8");
  }
}
