import { describe, expect, it } from "vitest";
import { isValidPhoneNumber } from "../../src/domain/phone-numbers.ts";

describe("to: optional +, then 8 to 15 digits, the first not 0", () => {
  it("accepts 8 and 15 digits, with or without +", () => {
    expect(isValidPhoneNumber("12345678")).toBe(true);
    expect(isValidPhoneNumber("+12345678")).toBe(true);
    expect(isValidPhoneNumber("123456789012345")).toBe(true);
    expect(isValidPhoneNumber("+123456789012345")).toBe(true);
    expect(isValidPhoneNumber("+447700900123")).toBe(true);
    expect(isValidPhoneNumber("+9990000001")).toBe(true);
  });
  it("rejects 7 and 16 digits", () => {
    expect(isValidPhoneNumber("1234567")).toBe(false);
    expect(isValidPhoneNumber("+1234567")).toBe(false);
    expect(isValidPhoneNumber("1234567890123456")).toBe(false);
    expect(isValidPhoneNumber("+1234567890123456")).toBe(false);
  });
  it("rejects a leading 0 (after the + too)", () => {
    expect(isValidPhoneNumber("01234567")).toBe(false);
    expect(isValidPhoneNumber("+01234567")).toBe(false);
    expect(isValidPhoneNumber("0044770090012")).toBe(false);
  });
  it("rejects letters, spaces, separators, a second + and empty input", () => {
    for (const s of [
      "",
      "+",
      "1234567a",
      "+44 7700 900123",
      " 12345678",
      "12345678 ",
      "12345678\n",
      "+44-7700-900123",
      "(44)7700900123",
      "++12345678",
      "12345678+",
      "１２３４５６７８", // full-width digits
      "١٢٣٤٥٦٧٨٩", // Arabic-Indic digits
    ]) {
      expect(isValidPhoneNumber(s), JSON.stringify(s)).toBe(false);
    }
  });
});
