/**
 * A request's logger (rest/request-loggers.ts) is made when first written through, and writes what
 * pino's child did: every line of the request with its reqId, once; nothing below the level.
 */
import { PassThrough } from "node:stream";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { redactingLogger } from "../../src/logging.ts";
import { trackRequests } from "../../src/request-context.ts";
import { requestLoggers } from "../../src/rest/request-loggers.ts";

async function served(level: string): Promise<Map<string, Record<string, unknown>>> {
  const logs = new PassThrough();
  const lines: string[] = [];
  logs.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
  const app = Fastify({
    logger: redactingLogger({ stream: logs }, level),
    childLoggerFactory: requestLoggers,
  });
  trackRequests(app);
  app.get("/", async (request) => {
    request.log.info("the request's info");
    request.log.warn({ apiSecret: "s3cret" }, "the request's warning");
    request.log.child({ component: "part" }).warn("a child's warning");
    app.log.warn("the app's warning");
    return {};
  });
  await app.inject({ method: "GET", url: "/" });
  await app.close();
  return new Map(
    lines.map((line) => {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      expect(line.match(/"reqId"/g)?.length ?? 0, line).toBeLessThanOrEqual(1);
      return [String(parsed.msg), parsed];
    }),
  );
}

describe("a request's logger", () => {
  it("at warn writes the request's warnings with its reqId, redacted, and nothing below", async () => {
    const lines = await served("warn");
    const warning = lines.get("the request's warning");
    expect(warning?.reqId).toMatch(/./);
    expect(warning?.apiSecret).toBe("[REDACTED]");
    expect(lines.get("a child's warning")).toMatchObject({
      reqId: warning?.reqId,
      component: "part",
    });
    expect(lines.get("the app's warning")?.reqId).toBe(warning?.reqId);
    expect(lines.has("the request's info")).toBe(false);
    expect(lines.has("request completed")).toBe(false);
  });

  it("at info writes Fastify's request lines and the request's own, each with its reqId once", async () => {
    const lines = await served("info");
    const reqId = lines.get("the request's info")?.reqId;
    expect(reqId).toMatch(/./);
    for (const msg of ["incoming request", "request completed", "the request's warning"])
      expect(lines.get(msg)?.reqId, msg).toBe(reqId);
  });
});
