import { isUtf8 } from "node:buffer";
import type { FastifyInstance, FastifyRequest } from "fastify";
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
  const parseJson = app.getDefaultJsonParser("error", "error");
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

function stringsAreUnicode(value: unknown): boolean {
  if (typeof value === "string") return isWellFormedUnicode(value);
  if (value === null || typeof value !== "object") return true;
  for (const [key, item] of Object.entries(value)) {
    if (!isWellFormedUnicode(key) || !stringsAreUnicode(item)) return false;
  }
  return true;
}

/**
 * application/x-www-form-urlencoded with strict percent-decoding: malformed escapes and escapes
 * that are not UTF-8 are errors. A repeated key becomes an array, which the schema then refuses
 * where one value belongs.
 */
export function parseForm(body: Buffer): Record<string, string | string[]> {
  if (!isUtf8(body)) throw new RequestParseError("the body is not valid UTF-8");
  const fields: Record<string, string | string[]> = Object.create(null);
  const text = body.toString("utf8");
  if (text === "") return fields;
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    const key = decodeFormComponent(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? "" : decodeFormComponent(pair.slice(eq + 1));
    const previous = fields[key];
    if (previous === undefined) fields[key] = value;
    else fields[key] = Array.isArray(previous) ? [...previous, value] : [previous, value];
  }
  return { ...fields };
}

function decodeFormComponent(component: string): string {
  try {
    return decodeURIComponent(component.replaceAll("+", " "));
  } catch {
    throw new RequestParseError("the form parameters are not correctly percent-encoded UTF-8");
  }
}
