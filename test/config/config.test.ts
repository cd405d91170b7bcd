import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.ts";

describe("configuration", () => {
  it("runs on embedded defaults with no environment", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      grpcPort: 8081,
      mongodbUri: undefined,
      maxParts: 10,
    });
    expect(config.pricePerPartMicros).toBe(1_000_000);
    expect(config.webhookAllowPrivate).toBe(true);
  });

  it("reads how long MO parts wait and what an MO's data_coding 0 means", () => {
    expect(loadConfig({})).toMatchObject({ moReassemblyS: 1800, moDefaultAlphabet: "gsm7" });
    expect(
      loadConfig({ SMS_MO_REASSEMBLY_S: "60", SMS_MO_DEFAULT_ALPHABET: "latin1" }),
    ).toMatchObject({ moReassemblyS: 60, moDefaultAlphabet: "latin1" });
    expect(() => loadConfig({ SMS_MO_REASSEMBLY_S: "0" })).toThrow(/SMS_MO_REASSEMBLY_S/);
    expect(() => loadConfig({ SMS_MO_DEFAULT_ALPHABET: "utf8" })).toThrow(
      /SMS_MO_DEFAULT_ALPHABET: expected one of gsm7, ia5, latin1/,
    );
  });

  it("reports every bad value by name at once", () => {
    let error: unknown;
    try {
      loadConfig({ PORT: "eighty", SMS_WEBHOOK_ALLOW_PRIVATE: "maybe", SMS_MAX_PARTS: "0" });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join("\n");
    expect(problems).toContain('PORT: expected an integer from 0 to 65535, got "eighty"');
    expect(problems).toContain("SMS_WEBHOOK_ALLOW_PRIVATE");
    expect(problems).toContain("SMS_MAX_PARTS");
  });

  it("requires a strong admin token and refuses private webhook addresses in production", () => {
    expect(() => loadConfig({ NODE_ENV: "production" })).toThrow(/SMS_ADMIN_TOKEN: required/);
    expect(() => loadConfig({ NODE_ENV: "production", SMS_ADMIN_TOKEN: "short" })).toThrow(
      /at least 16/,
    );
    const config = loadConfig({ NODE_ENV: "production", SMS_ADMIN_TOKEN: "x".repeat(32) });
    expect(config.webhookAllowPrivate).toBe(false);
  });
});
