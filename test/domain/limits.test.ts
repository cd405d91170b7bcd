import { describe, expect, it } from "vitest";
import {
  BATCH_MAX_MESSAGES,
  BATCH_NAME_MAX_CHARS,
  countCodePoints,
  DEFAULT_MAX_PARTS,
  isValidBatchName,
  isValidSenderName,
  SENDER_NAME_MAX_CHARS,
  TTL_DEFAULT_SECONDS,
  TTL_MAX_SECONDS,
  TTL_MIN_SECONDS,
  validateTtl,
} from "../../src/domain/limits.ts";

describe("the contract's limits", () => {
  it("has the documented values", () => {
    expect([TTL_MIN_SECONDS, TTL_MAX_SECONDS, TTL_DEFAULT_SECONDS]).toEqual([1, 21600, 21600]);
    expect(BATCH_MAX_MESSAGES).toBe(10000);
    expect(BATCH_NAME_MAX_CHARS).toBe(20);
    expect(SENDER_NAME_MAX_CHARS).toBe(11);
    expect(DEFAULT_MAX_PARTS).toBe(10);
  });
});

describe("ttl: 1 to 21600 seconds, default 21600", () => {
  it("accepts 1 and 21600, rejects 0 and 21601", () => {
    expect(validateTtl(1)).toEqual({ ok: true, ttl: 1 });
    expect(validateTtl(21600)).toEqual({ ok: true, ttl: 21600 });
    expect(validateTtl(0).ok).toBe(false);
    expect(validateTtl(21601).ok).toBe(false);
    expect(validateTtl(-5).ok).toBe(false);
  });
  it("defaults to 21600 when absent", () => {
    expect(validateTtl(undefined)).toEqual({ ok: true, ttl: 21600 });
    expect(validateTtl(null)).toEqual({ ok: true, ttl: 21600 });
    expect(validateTtl("")).toEqual({ ok: true, ttl: 21600 });
  });
  it("accepts decimal strings from forms", () => {
    expect(validateTtl("3600")).toEqual({ ok: true, ttl: 3600 });
    expect(validateTtl("0").ok).toBe(false);
    expect(validateTtl("21601").ok).toBe(false);
  });
  it("rejects non-integers and anything else", () => {
    for (const v of [
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      "1.5",
      "1e3",
      " 60",
      "+60",
      "-1",
      "abc",
      true,
      {},
      [],
    ]) {
      const r = validateTtl(v);
      expect(r.ok, String(v)).toBe(false);
      if (!r.ok) expect(r.error).toMatch(/1 to 21600/);
    }
  });
});

describe("sender name: 1 to 11 ASCII letters and digits", () => {
  it("accepts 1 and 11 characters, rejects 12 and empty", () => {
    expect(isValidSenderName("A")).toBe(true);
    expect(isValidSenderName("Acme2024Sms")).toBe(true);
    expect(isValidSenderName("Acme2024Smss")).toBe(false);
    expect(isValidSenderName("")).toBe(false);
  });
  it("rejects anything but letters and digits", () => {
    for (const s of [
      "Acme Shop",
      "Acme-Shop",
      "Acme_Shop",
      "Acme.",
      "Café",
      "Acme\n",
      "ＡＢＣ",
      "+1234",
    ]) {
      expect(isValidSenderName(s), s).toBe(false);
    }
  });
});

describe("batch name: at most 20 characters, counted in code points", () => {
  it("accepts 20, rejects 21", () => {
    expect(isValidBatchName("b".repeat(20))).toBe(true);
    expect(isValidBatchName("b".repeat(21))).toBe(false);
    expect(isValidBatchName("")).toBe(true);
  });
  it("an emoji counts as one character", () => {
    const emoji = "\u{1F680}";
    expect(countCodePoints(emoji)).toBe(1);
    expect(isValidBatchName(emoji.repeat(20))).toBe(true);
    expect(isValidBatchName(emoji.repeat(21))).toBe(false);
    expect(isValidBatchName(`${emoji.repeat(10)}${"x".repeat(10)}`)).toBe(true);
    expect(isValidBatchName(`${emoji.repeat(10)}${"x".repeat(11)}`)).toBe(false);
  });
  it("a lone surrogate counts as one", () => {
    expect(countCodePoints("\ud800\ud800\udc00\udc00")).toBe(3);
  });
});
