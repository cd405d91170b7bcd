import { isUtf8 } from "node:buffer";
import type { FastifyInstance, FastifyRequest } from "fastify";

// Bodies are read as bytes and checked before decoding: text must be valid UTF-8, never silently
// repaired with U+FFFD. Both parsers fail with a RequestParseError, rendered as errors.request.

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
      if (!isUtf8(body)) return done(new RequestParseError("the body is not valid UTF-8"), undefined);
      parseJson(request, body.toString("utf8"), (error, value) => {
        if (error) return done(new RequestParseError(`the body is not valid JSON: ${error.message}`), undefined);
        if (value === null || typeof value !== "object" || Array.isArray(value)) {
          return done(new RequestParseError("the body must be a JSON object"), undefined);
        }
        done(null, value);
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
