/**
 * METRICS_PORT (docs/design.md, "Operations"): metrics on a port of their own, never PORT or GRPC_PORT;
 * 0 turns them off, and then the service keeps none.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/config.ts";
import { startService } from "../support/service.ts";

describe("METRICS_PORT", () => {
  it("defaults to 9464", () => {
    expect(loadConfig({}).metricsPort).toBe(9464);
  });

  it("is refused on the public ports", () => {
    for (const env of [
      { PORT: "9000", METRICS_PORT: "9000" },
      { GRPC_PORT: "9001", METRICS_PORT: "9001" },
    ]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(/METRICS_PORT: must differ from PORT and GRPC_PORT/);
    }
  });

  it("0 keeps no metrics at all", async () => {
    const service = await startService({ METRICS_PORT: "0" });
    try {
      expect(service.metrics).toBeUndefined();
      expect(service.metricsUrl).toBeUndefined();
    } finally {
      await service.close();
    }
  });
});
