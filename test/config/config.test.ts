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

  it("keeps the operator console on loopback unless the admin token is long and not the default", () => {
    expect(loadConfig({})).toMatchObject({ operatorPort: 8082, operatorHost: "127.0.0.1" });
    for (const token of [undefined, "short-token"]) {
      expect(() =>
        loadConfig({ OPERATOR_HOST: "0.0.0.0", ...(token && { SMS_ADMIN_TOKEN: token }) }),
      ).toThrow(/OPERATOR_HOST: 0\.0\.0\.0 is not loopback, and SMS_ADMIN_TOKEN/);
    }
    const open = loadConfig({
      OPERATOR_HOST: "0.0.0.0",
      SMS_ADMIN_TOKEN: "a-long-enough-admin-token",
    });
    expect(open.operatorHost).toBe("0.0.0.0");
    expect(loadConfig({ OPERATOR_HOST: "0.0.0.0", OPERATOR_PORT: "0" }).operatorPort).toBe(0);
    expect(() => loadConfig({ OPERATOR_PORT: "8080" })).toThrow(/OPERATOR_PORT: must differ/);
    expect(() => loadConfig({ SMS_WEBHOOK_SECRET_OVERLAP: "soon" })).toThrow(
      /SMS_WEBHOOK_SECRET_OVERLAP/,
    );
    expect(loadConfig({}).webhookSecretOverlapMs).toBe(24 * 3600_000);
  });
});
