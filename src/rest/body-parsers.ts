import { isUtf8 } from "node:buffer";
import { errorCodes, type FastifyInstance, type FastifyRequest } from "fastify";
import { FORM_MAX_PARAMETERS } from "../domain/limits.ts";
import {
  type BodySlot,
  LARGE_BODY_BYTES,
  type LargeBodySlots,
} from "../rate-limits/large-bodies.ts";
import { JsonBodyParse } from "../request-bodies/body-parse-pool.ts";
import { readBody } from "../request-bodies/body-reading.ts";
import { type KnownFields, knownFieldsOf } from "../request-bodies/json-decoding.ts";
import { JsonShapeScanner } from "../request-bodies/json-shape.ts";
import { BODY_SHAPE_LIMITS } from "../request-bodies/shape-limits.ts";

// Bodies are read as bytes and checked before decoding (request-bodies/json-decoding.ts: UTF-8,
// lone surrogates, prototype keys). JSON is scanned as it arrives: nesting and value counts past
// BODY_SHAPE_LIMITS end the read before anything is parsed. Bodies over 1 MiB take a slot of
// LargeBodySlots (per client address and in all) before they are read, and are parsed off the
// main thread. Parse failures are RequestParseErrors, rendered as errors.request.

export class RequestParseError extends Error {
  readonly statusCode: number = 400;
}

export const FORM = "application/x-www-form-urlencoded";

/** Forms are small on every route (at most 100 short parameters), /sms-batch's limit or not. */
const FORM_MAX_BYTES = 1024 * 1024;

class FormTooLarge extends RequestParseError {
  override readonly statusCode = 413;
}

export function registerBodyParsers(
  app: FastifyInstance,
  options: { largeBodies?: LargeBodySlots } = {},
): void {
  const { largeBodies } = options;
  app.removeContentTypeParser(["application/json", "text/plain"]);
  const slots = new WeakMap<FastifyRequest, BodySlot>();
  if (largeBodies) {
    // Before any byte of the body is read: a declared large body without a slot is refused at
    // once (an oversize one is left to the 413). The slot is held until the answer is out.
    // A body whose Content-Length is small never needs one (the HTTP parser reads no byte past
    // it), so most requests pass without a slot, a listener or a promise.
    app.addHook("onRequest", (request, reply, done) => {
      const declared = declaredLength(request);
      if (declared === undefined && request.headers["transfer-encoding"] === undefined)
        return done();
      if (declared !== undefined && declared <= LARGE_BODY_BYTES) return done();
      if ((declared ?? 0) > (request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY))
        return done();
      try {
        const slot = largeBodies.forBody(request.ip, declared);
        reply.raw.once("close", slot.release);
        slots.set(request, slot);
      } catch (error) {
        return done(error as Error);
      }
      done();
    });
  }
  // The route's known parameters, from its body schema, once per route.
  const knownByRoute = new WeakMap<object, KnownFields | undefined>();
  const knownFields = (route: FastifyRequest["routeOptions"]) => {
    const schema = route.schema?.body;
    if (!schema) return undefined;
    if (!knownByRoute.has(schema)) knownByRoute.set(schema, knownFieldsOf(schema));
    return knownByRoute.get(schema);
  };

  app.addContentTypeParser("application/json", (request: FastifyRequest, payload, done) => {
    const scanner = new JsonShapeScanner(BODY_SHAPE_LIMITS);
    const slot = slots.get(request);
    // Fastify builds this object anew on every read of it.
    const route = request.routeOptions;
    // Each chunk goes on to the parse once scanned: a large body to its worker as it arrives.
    const parse = new JsonBodyParse({ known: knownFields(route) });
    readBody(payload, {
      limit: route.bodyLimit ?? app.initialConfig.bodyLimit ?? FORM_MAX_BYTES,
      declaredLength: declaredLength(request),
      tooLarge: () => new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(),
      wrongLength: () => new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH(),
      inspect: (chunk, received) => {
        slot?.admit(received);
        const violation = scanner.feed(chunk);
        if (violation) throw new RequestParseError(violation);
      },
      take: (chunk) => parse.write(chunk),
    })
      .then(
        () => parse.end(),
        (error: Error) => {
          parse.abort();
          throw error;
        },
      )
      .then(
        (result) =>
          result.ok ? done(null, result.value) : done(new RequestParseError(result.message)),
        (error: Error) => done(error),
      );
  });

  app.addContentTypeParser(FORM, (request: FastifyRequest, payload, done) => {
    const limit = Math.min(request.routeOptions.bodyLimit ?? FORM_MAX_BYTES, FORM_MAX_BYTES);
    readBody(payload, {
      limit,
      declaredLength: declaredLength(request),
      tooLarge: () =>
        new FormTooLarge(`a form body is larger than the limit of ${limit} bytes; send JSON`),
      wrongLength: () => new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH(),
    }).then(
      ({ chunks, length }) => {
        try {
          done(null, parseForm(Buffer.concat(chunks, length)));
        } catch (error) {
          done(error as Error);
        }
      },
      (error: Error) => done(error),
    );
  });
}

function declaredLength(request: FastifyRequest): number | undefined {
  const header = request.headers["content-length"];
  return header === undefined ? undefined : Number(header);
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
