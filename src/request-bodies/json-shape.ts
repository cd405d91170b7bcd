// What a JSON body costs to parse is bounded before it is parsed: a scanner reads the raw bytes as
// they arrive and counts nesting depth and values, so a body nested millions deep or holding
// millions of tiny values (`[{},{},…]` is 3 bytes a value, 50-100 bytes of heap once parsed) is
// refused at the first byte over a limit, and the rest of it is never read. It does not validate
// JSON: bytes JSON.parse refuses may pass here; whatever JSON.parse accepts is counted exactly.
// Values are array elements and object members, at every depth, plus the body itself; the limits
// and their refusals are shape-limits.ts's.

import { BODY_SHAPE_LIMITS, type ShapeLimits, ShapeVerdict } from "./shape-limits.ts";

const WORDS = { body: "body", values: "values (array elements and object members)" };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/** Where `byte` is next in `chunk` from `from`, or the chunk's length. */
function indexOrEnd(chunk: Uint8Array, byte: number, from: number): number {
  const index = chunk.indexOf(byte, from);
  return index < 0 ? chunk.length : index;
}

function isWhitespace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/** Feed it a body's bytes in order, chunk by chunk; it says why once the body is over a limit. */
export class JsonShapeScanner {
  private depth = 0;
  private values = 0;
  private inString = false;
  private escaped = false;
  /** Just after `[` or `{`: the next byte that is no whitespace opens its first entry, or closes it. */
  private opened = false;
  private readonly verdict: ShapeVerdict;

  constructor(limits: ShapeLimits = BODY_SHAPE_LIMITS) {
    this.verdict = new ShapeVerdict(limits, WORDS);
  }

  /** Scans `chunk`; returns the first violation (then and ever after), or undefined. */
  feed(chunk: Uint8Array): string | undefined {
    const { verdict } = this;
    if (verdict.violation) return verdict.violation;
    const { maxDepth, maxValues } = verdict.limits;
    let { depth, values, inString, escaped, opened } = this;
    const length = chunk.length;
    // Inside strings (most of a large body) byte by byte, but a long plain stretch is skipped to
    // the next quote or backslash natively (a native call costs what a few hundred bytes here do).
    let plain = 0;
    for (let i = 0; i < length; i++) {
      if (inString) {
        const byte = chunk[i] as number;
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) {
          escaped = true;
          plain = 0;
        } else if (byte === QUOTE) inString = false;
        else if (++plain >= 1024) {
          plain = 0;
          i = Math.min(indexOrEnd(chunk, QUOTE, i + 1), indexOrEnd(chunk, BACKSLASH, i + 1)) - 1;
        }
        continue;
      }
      const byte = chunk[i] as number;
      if (isWhitespace(byte)) continue;
      if (opened) {
        opened = false;
        if (byte !== CLOSE_ARRAY && byte !== CLOSE_OBJECT) values++;
      } else if (values === 0) {
        values = 1; // the body itself
      }
      if (byte === QUOTE) {
        inString = true;
        plain = 0;
      } else if (byte === COMMA) values++;
      else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
        depth++;
        opened = true;
        if (depth > maxDepth) return verdict.tooDeep();
      } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
        // More closed than opened: no JSON, and counting on from there would be wrong.
        if (--depth < 0) {
          return verdict.refuse("the body is not valid JSON: a bracket closes what was not opened");
        }
      }
      if (values > maxValues) return verdict.tooMany();
    }
    this.depth = depth;
    this.values = values;
    this.inString = inString;
    this.escaped = escaped;
    this.opened = opened;
    return undefined;
  }
}
