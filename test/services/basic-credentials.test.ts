/**
 * Basic credentials are decoded as a Buffer decodes base64 into UTF-8 text, whichever way
 * src/services/authentication.ts takes (atob for padded base64 of ASCII text).
 */
import { describe, expect, it } from "vitest";
import { basicCredentials } from "../../src/services/authentication.ts";

/** The decoding before issue 43: a Buffer's. */
function reference(encoded: string): string {
  return Buffer.from(encoded, "base64").toString("utf8");
}

function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
}

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";

describe("basicCredentials", () => {
  it("decodes issued credentials, text beyond ASCII and odd base64 as a Buffer does", () => {
    const texts = [
      "ak_live_abc:s3cr3t",
      "key-only",
      ":secret-only",
      "ключ:секрет",
      "key:pass:with:colons",
      "",
      "\u0000:\u007f",
      "a:\u0080\u00ff",
    ];
    const encoded = texts.map((text) => Buffer.from(text, "utf8").toString("base64"));
    const next = random(43);
    for (let i = 0; i < 2000; i++) {
      const length = Math.floor(next() * 24);
      let value = "";
      for (let j = 0; j < length; j++) value += ALPHABET[Math.floor(next() * ALPHABET.length)];
      encoded.push(value);
    }
    // Unpadded, over-padded, padding inside.
    encoded.push("YWI", "YWI==", "YQ==YQ==", "=YWJj", "YWJj====");
    for (const value of encoded) {
      const decoded = reference(value);
      const colon = decoded.indexOf(":");
      const expected =
        value === ""
          ? { apiKey: "", apiSecret: "" }
          : colon < 0
            ? { apiKey: decoded, apiSecret: "" }
            : { apiKey: decoded.slice(0, colon), apiSecret: decoded.slice(colon + 1) };
      expect(basicCredentials(`Basic ${value}`), value).toEqual(expected);
    }
  });

  it("reads no credentials from another scheme or none", () => {
    for (const header of [null, "", "Bearer abc", "Basic a b"]) {
      expect(basicCredentials(header)).toEqual({ apiKey: "", apiSecret: "" });
    }
  });
});
