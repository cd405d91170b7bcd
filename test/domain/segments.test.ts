import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  countParts,
  MULTI_PART_MAX,
  measureText,
  SINGLE_PART_MAX,
  segmentText,
  splitText,
  textEncoding,
  textErrorMessage,
  validateText,
} from "../../src/domain/segments.ts";

const EMOJI = "\u{1F600}"; // 😀, two UTF-16 units
const lens = (parts: string[]) => parts.map((p) => p.length);

describe("encoding: ISO-Latin-1 only, or not", () => {
  it("plain ASCII, é and ÿ (U+00FF) are Latin-1", () => {
    expect(textEncoding("hello")).toBe("latin1");
    expect(textEncoding("café")).toBe("latin1");
    expect(textEncoding("\u00ff")).toBe("latin1");
  });
  it("€ (U+20AC), Ā (U+0100) and an emoji are not", () => {
    expect(textEncoding("5 €")).toBe("unicode");
    expect(textEncoding("\u0100")).toBe("unicode");
    expect(textEncoding(`hi ${EMOJI}`)).toBe("unicode");
  });
});

describe("Latin-1 text: one message up to 160 characters, else parts of at most 153", () => {
  it("160 characters is one message", () => {
    const r = segmentText("a".repeat(160));
    expect(r).toEqual({ ok: true, encoding: "latin1", parts: ["a".repeat(160)] });
  });
  it("161 characters is two parts: 153 + 8", () => {
    const r = segmentText("a".repeat(161));
    expect(r.ok && lens(r.parts)).toEqual([153, 8]);
  });
  it("306 characters is 2 parts, 307 is 3", () => {
    expect(countParts("a".repeat(306))).toBe(2);
    expect(countParts("a".repeat(307))).toBe(3);
    const r = segmentText("b".repeat(307));
    expect(r.ok && lens(r.parts)).toEqual([153, 153, 1]);
  });
  it("é keeps the Latin-1 rule: 160 é is one message", () => {
    expect(measureText("é".repeat(160))).toEqual({ encoding: "latin1", partCount: 1 });
    expect(measureText("ÿ".repeat(161))).toEqual({ encoding: "latin1", partCount: 2 });
  });
});

describe("other text: one message up to 70 UTF-16 code units, else parts of at most 67", () => {
  it("one € forces the 70/67 rule", () => {
    expect(measureText(`€${"a".repeat(69)}`)).toEqual({ encoding: "unicode", partCount: 1 });
    const r = segmentText(`€${"a".repeat(70)}`);
    expect(r.ok && r.encoding).toBe("unicode");
    expect(r.ok && lens(r.parts)).toEqual([67, 4]);
  });
  it("134 units is 2 parts, 135 is 3", () => {
    expect(countParts("€".repeat(134))).toBe(2);
    expect(countParts("€".repeat(135))).toBe(3);
  });
  it("counts UTF-16 code units: 35 emoji (70 units) is one message, 36 is split", () => {
    expect(countParts(EMOJI.repeat(35))).toBe(1);
    expect(countParts(EMOJI.repeat(36))).toBe(2);
  });
  it("never splits a surrogate pair: an emoji at the boundary moves to the next part (part of 66)", () => {
    const text = `${"a".repeat(66)}${EMOJI}${"b".repeat(10)}`;
    const r = segmentText(text);
    expect(r.ok && r.parts).toEqual(["a".repeat(66), `${EMOJI}${"b".repeat(10)}`]);
  });
  it("an emoji ending exactly at unit 67 stays in the first part", () => {
    const text = `${"a".repeat(65)}${EMOJI}${"b".repeat(10)}`;
    const r = segmentText(text);
    expect(r.ok && lens(r.parts)).toEqual([67, 10]);
  });
  it("emoji only: every part holds 33 emoji (66 units)", () => {
    const r = segmentText(EMOJI.repeat(100));
    expect(r.ok && lens(r.parts)).toEqual([66, 66, 66, 2]);
    expect(countParts(EMOJI.repeat(100))).toBe(4);
  });
  it("ZWJ emoji sequences may be split between their code points (only pairs are kept)", () => {
    const family = "\u{1F468}\u200D\u{1F469}\u200D\u{1F467}"; // 8 units
    const text = `${"a".repeat(63)}${family}`;
    const r = segmentText(text);
    expect(r.ok && r.parts).toEqual([
      `${"a".repeat(63)}\u{1F468}\u200D`,
      "\u{1F469}\u200D\u{1F467}",
    ]);
  });
});

describe("longest text: at most 10 parts by default", () => {
  it("1530 Latin-1 characters is 10 parts, 1531 is too many", () => {
    expect(validateText("a".repeat(1530))).toEqual({ ok: true, encoding: "latin1", partCount: 10 });
    expect(segmentText("a".repeat(1531))).toEqual({
      ok: false,
      error: "too_many_parts",
      encoding: "latin1",
      partCount: 11,
      maxParts: 10,
    });
  });
  it("670 other units is 10 parts, 671 is too many", () => {
    const ok = segmentText("€".repeat(670));
    expect(ok.ok && ok.parts.length).toBe(10);
    const r = validateText("€".repeat(671));
    expect(r).toMatchObject({
      ok: false,
      error: "too_many_parts",
      encoding: "unicode",
      partCount: 11,
    });
  });
  it("the limit is configurable", () => {
    expect(segmentText("a".repeat(160), 1).ok).toBe(true);
    expect(segmentText("a".repeat(161), 1)).toMatchObject({ ok: false, error: "too_many_parts" });
    expect(validateText("a".repeat(1531), 11).ok).toBe(true);
  });
  it("has an error message for errors.text", () => {
    expect(textErrorMessage("too_many_parts", 10)).toMatch(/10 parts/);
    expect(textErrorMessage("empty")).toMatch(/empty/);
  });
});

describe("empty text is not a message (callers reject it first)", () => {
  it("has no parts and is an error", () => {
    expect(countParts("")).toBe(0);
    expect(splitText("").parts).toEqual([]);
    expect(segmentText("")).toMatchObject({ ok: false, error: "empty" });
    expect(validateText("")).toMatchObject({ ok: false, error: "empty" });
  });
});

// Strings rich in surrogates: pairs, lone high and low halves, Latin-1, other BMP characters.
const surrogateHeavy = fc.string({
  unit: fc.oneof(
    fc.constantFrom(EMOJI, "\u{10FFFF}", "\u{1F468}\u200D", "\ud800", "\udc00", "\udbff", "\udfff"),
    fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
    fc.integer({ min: 0, max: 0xff }).map((c) => String.fromCharCode(c)),
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  ),
  maxLength: 400,
  size: "max", // fast-check's default size keeps strings far shorter than a part
});
const latin1 = fc.string({
  unit: fc.integer({ min: 0, max: 0xff }).map((c) => String.fromCharCode(c)),
  maxLength: 2000,
  size: "max",
});
const anyText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 400, size: "max" }),
  fc.string({ unit: "grapheme", maxLength: 200, size: "max" }),
  fc.string({ unit: "binary" }), // short texts too
  surrogateHeavy,
  latin1,
);

const isHigh = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number) => c >= 0xdc00 && c <= 0xdfff;

describe("properties, for any text", () => {
  it("parts rejoin to the text, respect their encoding's limit, and the fast count agrees", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const { encoding, parts } = splitText(text);
        expect(parts.join("")).toBe(text);
        expect(encoding).toBe(textEncoding(text));
        expect(countParts(text)).toBe(parts.length);
        expect(measureText(text)).toEqual({ encoding, partCount: parts.length });
        if (parts.length > 1) {
          for (const p of parts) {
            expect(p.length).toBeGreaterThan(0);
            expect(p.length).toBeLessThanOrEqual(MULTI_PART_MAX[encoding]);
          }
        } else if (text.length > 0) {
          expect(parts).toEqual([text]);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("no part starts with the low half of a pair split from the previous part", () => {
    fc.assert(
      fc.property(surrogateHeavy, (text) => {
        const { parts } = splitText(text);
        for (let i = 1; i < parts.length; i++) {
          const prev = parts[i - 1] as string;
          const cur = parts[i] as string;
          expect(isHigh(prev.charCodeAt(prev.length - 1)) && isLow(cur.charCodeAt(0))).toBe(false);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("parts are as long as allowed: each part but the last is full, or 1 shorter to keep a pair", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const { encoding, parts } = splitText(text);
        if (parts.length < 2) return;
        const max = MULTI_PART_MAX[encoding];
        for (const p of parts.slice(0, -1)) {
          if (p.length === max) continue;
          expect(p.length).toBe(max - 1);
          expect(encoding).toBe("unicode");
        }
      }),
    );
  });

  it("a text within the single-part limit is never split", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const encoding = textEncoding(text);
        fc.pre(text.length > 0 && text.length <= SINGLE_PART_MAX[encoding]);
        expect(segmentText(text)).toEqual({ ok: true, encoding, parts: [text] });
      }),
    );
  });

  it("segmentText fails exactly when the count exceeds maxParts", () => {
    fc.assert(
      fc.property(anyText, fc.integer({ min: 1, max: 12 }), (text, maxParts) => {
        const n = countParts(text);
        const r = segmentText(text, maxParts);
        expect(r.ok).toBe(n >= 1 && n <= maxParts);
        if (r.ok) expect(r.parts.length).toBe(n);
      }),
    );
  });
});

describe("performance of the fast counter", () => {
  it("counts 10000 texts of 10 parts in well under a second", () => {
    const texts = Array.from(
      { length: 10_000 },
      (_, i) => `${"x".repeat(600)}${EMOJI}${"€".repeat(60)}${i}`,
    );
    const t0 = performance.now();
    let total = 0;
    for (const t of texts) total += countParts(t);
    const ms = performance.now() - t0;
    expect(total).toBeGreaterThan(0);
    expect(ms).toBeLessThan(1000);
  });
});
