import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { keywordsOf, optOutTypeOf } from "../../src/opt-outs/keywords.ts";

describe("opt-out words: the whole text, trimmed of spaces and punctuation, without case", () => {
  it("knows every word of the design's lists", () => {
    for (const word of [
      "STOP",
      "STOPALL",
      "UNSUBSCRIBE",
      "CANCEL",
      "END",
      "QUIT",
      "REVOKE",
      "OPTOUT",
    ]) {
      expect(optOutTypeOf(word)).toBe("STOP");
    }
    for (const word of ["OPT OUT", "OPT-OUT", "ARRET"]) expect(optOutTypeOf(word)).toBe("STOP");
    for (const word of ["START", "YES", "UNSTOP"]) expect(optOutTypeOf(word)).toBe("START");
    for (const word of ["HELP", "INFO"]) expect(optOutTypeOf(word)).toBe("HELP");
  });

  it("ignores case, surrounding spaces and punctuation, and the accent of ARRÊT", () => {
    expect(optOutTypeOf("  stop. ")).toBe("STOP");
    expect(optOutTypeOf("Stop!!")).toBe("STOP");
    expect(optOutTypeOf('"unsubscribe"')).toBe("STOP");
    expect(optOutTypeOf("Opt out")).toBe("STOP");
    expect(optOutTypeOf("arrêt")).toBe("STOP");
    expect(optOutTypeOf("yes?")).toBe("START");
    expect(optOutTypeOf("\nhelp\n")).toBe("HELP");
  });

  it("is no keyword when the text says more than the word", () => {
    expect(optOutTypeOf("STOP PLEASE")).toBeUndefined();
    expect(optOutTypeOf("please stop")).toBeUndefined();
    expect(optOutTypeOf("STOPP")).toBeUndefined();
    expect(optOutTypeOf("OPTOUT NOW")).toBeUndefined();
    expect(optOutTypeOf("")).toBeUndefined();
    expect(optOutTypeOf("!!!")).toBeUndefined();
    expect(optOutTypeOf(`STOP${" ".repeat(100)}`)).toBeUndefined();
  });

  it("finds a keyword in any case with any punctuation around it", () => {
    const punctuation = fc.stringMatching(/^[ .,!?;:'"\n\t-]{0,5}$/);
    const word = fc.constantFrom(
      ...keywordsOf("STOP"),
      ...keywordsOf("START"),
      ...keywordsOf("HELP"),
    );
    const casing = fc.array(fc.boolean(), { minLength: 16, maxLength: 16 });
    fc.assert(
      fc.property(punctuation, word, casing, punctuation, (before, keyword, upper, after) => {
        const cased = [...keyword]
          .map((c, i) => (upper[i % upper.length] ? c.toUpperCase() : c.toLowerCase()))
          .join("");
        const expected = keywordsOf("STOP").includes(keyword)
          ? "STOP"
          : keywordsOf("START").includes(keyword)
            ? "START"
            : "HELP";
        expect(optOutTypeOf(`${before}${cased}${after}`)).toBe(expected);
      }),
    );
  });
});
