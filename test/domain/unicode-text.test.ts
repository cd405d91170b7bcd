import { describe, expect, it } from "vitest";
import { isWellFormedUnicode } from "../../src/domain/unicode-text.ts";

describe("well-formed Unicode text", () => {
  it("accepts any text whose surrogates come in pairs", () => {
    for (const s of ["", "abc", "é€", "😀", "a😀b", "\u{10FFFF}"]) {
      expect(isWellFormedUnicode(s)).toBe(true);
    }
  });

  it("refuses a lone high or low surrogate, or a pair in the wrong order", () => {
    for (const s of ["\ud800", "a\udc00", "\udbffx", "\udc00\ud800", "😀\ud83d"]) {
      expect(isWellFormedUnicode(s)).toBe(false);
    }
  });
});
