import type { DescField, DescMessage } from "@bufbuild/protobuf";
import type { UniversalServerRequest } from "@connectrpc/connect/protocol";
import type { KnownFields } from "../request-bodies/json-decoding.ts";

// A Connect unary JSON request is parsed before connect-es sees it, so that a large one is parsed
// off the main thread (request-bodies/body-parse-pool.ts) and only its known fields come back:
// connect-es reads a JSON body whole and runs JSON.parse on the main thread (about 5 ms a MB), and
// offers no hook there. It takes a universal request's body as already parsed JSON when it is no
// byte stream: the request gate, once the caller is authenticated, reads the body through the
// same checks (slots, shape scanner, inflation) and puts the parsed JSON in its place.

/** The fields connect-es's fromJson takes for `desc`, by JSON name and proto name. */
export function knownFieldsOfMessage(desc: DescMessage, depth = 0): KnownFields {
  const properties: Record<string, KnownFields> = {};
  for (const field of desc.fields) {
    const known = knownFieldsOfField(field, depth);
    properties[field.jsonName] = known;
    properties[field.name] = known;
  }
  return { properties };
}

function knownFieldsOfField(field: DescField, depth: number): KnownFields {
  // Maps, and messages whose JSON is not an object of their fields (well-known types), whole.
  if (field.fieldKind === "map") return { any: true };
  const message =
    field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message")
      ? field.message
      : undefined;
  if (message && (message.typeName.startsWith("google.protobuf.") || depth > 32)) {
    return { any: true };
  }
  const inner = message ? knownFieldsOfMessage(message, depth + 1) : {};
  return field.fieldKind === "list" ? { items: inner } : inner;
}

/** Replaces the body connect-es will read by the parsed JSON (see above). */
export function replaceBody(request: UniversalServerRequest, json: unknown): void {
  (request as { body: unknown }).body = json;
}
