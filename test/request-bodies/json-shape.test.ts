/**
 * The JSON shape scanner alone (pure): it counts depth and values exactly for every body JSON.parse
 * accepts, however the bytes are split into chunks, so it never refuses a body within its limits
 * and always refuses one past them.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonShapeScanner } from "../../src/request-bodies/json-shape.ts";
import { BODY_SHAPE_LIMITS, type ShapeLimits } from "../../src/request-bodies/shape-limits.ts";
import { feedInChunks } from "./chunked-feed.ts";

/** Depth and value count as the scanner defines them, computed on the parsed value. */
function shapeOf(value: unknown): { depth: number; values: number } {
  if (value === null || typeof value !== "object") return { depth: 0, values: 1 };
  let depth = 0;
  let values = 1;
  for (const item of Object.values(value)) {
    const inner = shapeOf(item);
    depth = Math.max(depth, inner.depth);
    values += inner.values;
  }
  return { depth: depth + 1, values };
}

/** Feeds `text` in the chunks `cuts` splits it into; the first violation, if any. */
const scan = (text: string, limits: ShapeLimits, cuts: number[] = []) =>
  feedInChunks(new JsonShapeScanner(limits), Buffer.from(text), cuts);

const batch = (count: number, extra: object = {}) =>
  JSON.stringify({
    apiKey: "key",
    apiSecret: "secret",
    name: "x",
    messages: Array.from({ length: count }, (_, i) => ({
      to: `+49151${10_000_000 + i}`,
      text: 'Hello "world" [1, {2}] \\ é \u0000',
      from: null,
      ...extra,
    })),
  });

describe("JSON shape scanner", () => {
  it("a 10000-message batch is within the body limits, with two ignored fields per message", () => {
    expect(
      scan(batch(10_000, { ref: "a,b", tags: ["x"] }), BODY_SHAPE_LIMITS, [1000, 77_777]),
    ).toBeUndefined();
  });

  it("refuses nesting past the depth limit at the first bracket too many", () => {
    const text = `{"apiKey":"k","messages":${"[".repeat(33)}${"]".repeat(33)}}`;
    expect(scan(text, BODY_SHAPE_LIMITS)).toBe("the body nests deeper than 32 levels");
    const scanner = new JsonShapeScanner();
    // 16 MB of brackets: refused within the first chunk, whatever follows.
    expect(scanner.feed(Buffer.alloc(64 * 1024, "["))).toMatch(/deeper than 32/);
  });

  it("refuses a flat body of empty objects past the value limit", () => {
    const text = `[${"{},".repeat(BODY_SHAPE_LIMITS.maxValues)}{}]`;
    expect(scan(text, BODY_SHAPE_LIMITS)).toBe(
      `the body holds more than ${BODY_SHAPE_LIMITS.maxValues} values (array elements and object members)`,
    );
  });

  it("brackets, commas and escaped quotes inside strings are text", () => {
    const text = JSON.stringify({ a: `${"[{,".repeat(1000)}\\"\\\\"` });
    expect(scan(text, { maxDepth: 1, maxValues: 2 })).toBeUndefined();
  });

  it("a bracket closing what was not opened is refused", () => {
    expect(scan("]]]]", BODY_SHAPE_LIMITS)).toMatch(/not valid JSON/);
  });

  it("property: exact depth and count of any JSON, in any chunks", () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 6 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.boolean(),
        (value, cuts, pretty) => {
          const text = JSON.stringify(value, null, pretty ? 2 : undefined);
          const { depth, values } = shapeOf(JSON.parse(text));
          expect(scan(text, { maxDepth: depth, maxValues: values }, cuts)).toBeUndefined();
          expect(scan(text, { maxDepth: depth, maxValues: values - 1 }, cuts)).toMatch(/values/);
          if (depth > 0) {
            expect(scan(text, { maxDepth: depth - 1, maxValues: values }, cuts)).toMatch(/deeper/);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("property: long strings (skipped natively) with quotes and escapes, in any chunks", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 900, maxLength: 4000, unit: "binary" }), { maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (strings, cuts) => {
          const text = JSON.stringify({ s: strings, t: [[strings.join('\\"[')]] });
          const { depth, values } = shapeOf(JSON.parse(text));
          expect(scan(text, { maxDepth: depth, maxValues: values }, cuts)).toBeUndefined();
          expect(scan(text, { maxDepth: depth - 1, maxValues: values }, cuts)).toMatch(/deeper/);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("property: valid batches within the limits are never refused", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record(
            { to: fc.string(), text: fc.string({ unit: "binary" }), from: fc.option(fc.string()) },
            { requiredKeys: [] },
          ),
          { minLength: 1, maxLength: 100 },
        ),
        fc.array(fc.nat(), { maxLength: 4 }),
        (messages, cuts) => {
          const text = JSON.stringify({ apiKey: "k", apiSecret: "s", messages });
          expect(scan(text, BODY_SHAPE_LIMITS, cuts)).toBeUndefined();
        },
      ),
    );
  });

  it("property: nesting past the limit is always refused, whatever surrounds it", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: BODY_SHAPE_LIMITS.maxDepth + 1, max: 500 }),
        fc.jsonValue({ maxDepth: 2 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        (depth, inner, cuts) => {
          let nested = JSON.stringify(inner);
          for (let i = 0; i < depth; i++) nested = i % 2 ? `[${nested}]` : `{"k":${nested}}`;
          expect(scan(nested, BODY_SHAPE_LIMITS, cuts)).toMatch(/deeper than 32/);
        },
      ),
    );
  });
});
