import { create, type DescMessage, type Message, ScalarType } from "@bufbuild/protobuf";
import { isWellFormedUnicode } from "../domain/unicode-text.ts";

// A Connect request's message from its JSON body when the body sets nothing but plain scalar
// fields (strings, booleans, 32-bit integers), as SendMessage's usually does: the message is
// created from the values as they are, where the usual way (call-requests.ts) first copies the
// known fields (keepKnown, which walks every field name of the type) and then runs protobuf-es's
// fromJson (a read context, sets of the fields and oneofs seen, a converter and a check per
// field): together 2 % of a Connect SendMessage's busy samples, which REST does not pay (issue 43).
// The same message: unknown keys are ignored as keepKnown drops them, each value is one fromJson
// takes as it is. Anything else (null, a number as a string, a message, list, map, enum or 64-bit
// field, a field set twice by both its names) is left to the usual way, which reads it or refuses
// it as before.

type Accepts = (value: unknown) => boolean;

/** fromJson refuses a string UTF-8 cannot carry (a lone surrogate): left to it. */
const isString: Accepts = (value) => typeof value === "string" && isWellFormedUnicode(value);
const isBoolean: Accepts = (value) => typeof value === "boolean";
const isInt32: Accepts = (value) =>
  typeof value === "number" &&
  Number.isInteger(value) &&
  value >= -2147483648 &&
  value <= 2147483647;
const isUint32: Accepts = (value) =>
  typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= 4294967295;

function accepts(scalar: ScalarType): Accepts | undefined {
  switch (scalar) {
    case ScalarType.STRING:
      return isString;
    case ScalarType.BOOL:
      return isBoolean;
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return isInt32;
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return isUint32;
    default:
      return undefined;
  }
}

/**
 * The message of `desc` a JSON value makes, as fromJson makes it of the value's known fields; or
 * undefined where the usual way is to read it.
 */
export function plainInputReader(desc: DescMessage): (json: unknown) => Message | undefined {
  // By JSON name and proto name; null: a field this reader leaves to the usual way.
  const fields = new Map<string, { localName: string; accepts: Accepts } | null>();
  for (const field of desc.fields) {
    const check = field.fieldKind === "scalar" && !field.oneof ? accepts(field.scalar) : undefined;
    const entry = check ? { localName: field.localName, accepts: check } : null;
    fields.set(field.jsonName, entry);
    fields.set(field.name, entry);
  }
  return (json) => {
    if (json === null || typeof json !== "object" || Array.isArray(json)) return undefined;
    const values = json as Record<string, unknown>;
    const init: Record<string, unknown> = {};
    for (const key of Object.keys(values)) {
      const entry = fields.get(key);
      if (entry === undefined) continue;
      if (entry === null) return undefined;
      const value = values[key];
      if (!entry.accepts(value) || Object.hasOwn(init, entry.localName)) return undefined;
      init[entry.localName] = value;
    }
    return create(desc, init as never);
  };
}
