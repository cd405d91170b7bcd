/**
 * Liveness and readiness (docs/design.md, "Operations"; issue 16 item 5): /health/live answers 200 while
 * the process runs; /health/ready (and /health) answers 503 naming what fails while the database
 * is unreachable, while the SMPP carrier has no bind and while draining on shutdown. Strangers
 * may ask PORT, so it names only what fails (issue 25 item 2.8): the SMSC, counters and bind
 * errors are on METRICS_PORT's /health, the operator's. Every log line written while serving a
 * request carries its reqId.
 */
import { type AddressInfo, connect, createServer } from "node:net";
import { PassThrough } from "node:stream";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redactingLogger } from "../../src/logging.ts";
import { trackRequests } from "../../src/request-context.ts";
import { type FaultyService, startFaultyService } from "../support/faulty-database.ts";
import { getJson, postJson, type RunningService, startService } from "../support/service.ts";

describe("a healthy instance", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await startService({}, undefined, { metrics: true });
  });
  afterAll(() => service?.close());

  it("is live and ready; /health is readiness", async () => {
    expect(await getJson(`${service.baseUrl}/health/live`)).toEqual({
      status: 200,
      body: { status: "ok" },
    });
    for (const path of ["/health/ready", "/health"]) {
      const answer = await getJson(`${service.baseUrl}${path}`);
      expect(answer).toEqual({ status: 200, body: { status: "ok" } });
    }
    expect(await getJson(service.operatorHealthUrl ?? "")).toEqual({
      status: 200,
      body: { status: "ok", mongodb: "reachable" },
    });
  });
});

describe("with the database unreachable", () => {
  let faulty: FaultyService;
  beforeAll(async () => {
    faulty = await startFaultyService();
  });
  afterAll(() => faulty?.close());

  it("is live, not ready, naming the database; ready again once it is back", async () => {
    faulty.proxy.blackhole();
    const [live, ready, legacy] = await Promise.all([
      getJson(`${faulty.service.baseUrl}/health/live`),
      getJson(`${faulty.service.baseUrl}/health/ready`),
      getJson(`${faulty.service.baseUrl}/health`),
    ]);
    expect(live.status).toBe(200);
    for (const answer of [ready, legacy]) {
      expect(answer).toEqual({ status: 503, body: { status: "unready", failing: ["database"] } });
    }
    faulty.proxy.restore();
    await eventually(
      async () => (await getJson(`${faulty.service.baseUrl}/health/ready`)).status === 200,
    );
  });
});

describe("with the SMPP carrier unbound", () => {
  let service: RunningService;
  let port: number;
  beforeAll(async () => {
    // An SMSC address where nothing listens: every bind attempt is refused.
    port = await closedPort();
    service = await startService(
      {
        SMS_RUN_WORKERS: "true",
        SMS_CARRIER: "smpp",
        SMS_SMPP_URL: `smpp://test:secret@127.0.0.1:${port}`,
      },
      undefined,
      { metrics: true },
    );
  });
  afterAll(() => service?.close());

  it("is live, not ready, naming the carrier", async () => {
    expect((await getJson(`${service.baseUrl}/health/live`)).status).toBe(200);
    const ready = await getJson(`${service.baseUrl}/health/ready`);
    expect(ready).toEqual({ status: 503, body: { status: "unready", failing: ["carrier"] } });
  });

  it("tells strangers only what fails; the operator's /health has the SMSC, counters and errors", async () => {
    await eventually(async () => {
      const details = (await getJson(service.operatorHealthUrl ?? "")).body;
      return details.carrier?.binds?.[0]?.lastError !== undefined;
    });
    const details = (await getJson(service.operatorHealthUrl ?? "")).body;
    expect(details).toMatchObject({
      status: "unready",
      failing: ["carrier"],
      mongodb: "reachable",
      carrier: {
        name: "smpp",
        state: "unbound",
        smsc: `smpp://test@127.0.0.1:${port}`,
        accepted: 0,
        binds: [expect.objectContaining({ state: expect.any(String), submitted: 0 })],
      },
    });
    const lastError = String(details.carrier.binds[0].lastError);
    expect(lastError).toMatch(/./);
    for (const path of ["/health", "/health/ready"]) {
      const response = await fetch(`${service.baseUrl}${path}`);
      const text = await response.text();
      expect(JSON.parse(text)).toEqual({ status: "unready", failing: ["carrier"] });
      for (const secret of ["smpp://", "test@", String(port), lastError, "accepted", "binds"]) {
        expect(text, `${path} shows ${secret}`).not.toContain(secret);
      }
    }
  });
});

describe("while draining", () => {
  it("stays live and answers not ready, naming draining", async () => {
    const logs = new PassThrough();
    const lines: string[] = [];
    logs.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n")));
    const service = await startService({ LOG_LEVEL: "info" }, undefined, { logStream: logs });
    // Requests whose heads are half sent now and completed while closing: new connections are
    // no longer accepted then, as a load balancer's probe on a kept-alive connection would be.
    const live = await halfSentGet(service.baseUrl, "/health/live");
    const ready = await halfSentGet(service.baseUrl, "/health/ready");
    const closed = service.close();
    await eventually(async () =>
      lines.some((line) => line.includes("new requests are answered 503")),
    );
    const [liveAnswer, readyAnswer] = await Promise.all([live.complete(), ready.complete()]);
    await closed;
    expect(liveAnswer.status).toBe(200);
    expect(readyAnswer.status).toBe(503);
    expect(JSON.parse(readyAnswer.body)).toEqual({ status: "unready", failing: ["draining"] });
  });
});

describe("request log lines", () => {
  it("every line of a served request carries its reqId, once", async () => {
    const logs = new PassThrough();
    const lines: string[] = [];
    logs.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
    const service = await startService({ LOG_LEVEL: "debug" }, undefined, { logStream: logs });
    try {
      const account = await service.createAccount({ credit: 10 });
      const before = lines.length;
      await postJson(`${service.baseUrl}/sms`, { ...account, to: "+4915112345678", text: "hi" });
      await postJson(`${service.baseUrl}/sms`, { ...account, to: "nope", text: "hi" });
      await getJson(`${service.baseUrl}/no-such-path`);
      const written = lines.slice(before).map((line) => JSON.parse(line));
      const ofRequests = written.filter((line) => line.req || line.res || line.err);
      expect(ofRequests.length).toBeGreaterThanOrEqual(6);
      for (const line of ofRequests) expect(line.reqId, JSON.stringify(line)).toMatch(/./);
    } finally {
      await service.close();
    }
  });

  it("lines written through the app's logger while serving a request carry it too", async () => {
    const logs = new PassThrough();
    const lines: string[] = [];
    logs.on("data", (chunk: Buffer) => lines.push(...chunk.toString().split("\n").filter(Boolean)));
    const app = Fastify({ logger: redactingLogger({ stream: logs }, "info") });
    trackRequests(app);
    const component = app.log.child({ component: "example" });
    app.get("/", async (request) => {
      app.log.info("from the app's logger");
      await new Promise((resolve) => setTimeout(resolve, 5));
      component.info("from a component's logger, after an await");
      request.log.info("from the request's logger");
      return {};
    });
    app.log.info("outside any request");
    await app.inject({ method: "GET", url: "/" });
    await app.close();
    const byMessage = new Map(lines.map((line) => [JSON.parse(line).msg, line]));
    for (const msg of [
      "from the app's logger",
      "from a component's logger, after an await",
      "from the request's logger",
      "request completed",
    ]) {
      const line = byMessage.get(msg) ?? "";
      expect(line.match(/"reqId"/g), `${msg}: ${line}`).toHaveLength(1);
    }
    expect(byMessage.get("outside any request")).not.toContain("reqId");
  });
});

async function eventually(check: () => Promise<boolean>, attempts = 100): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("condition not met");
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A GET whose head is sent but for its last line; `complete` sends that and reads the answer. */
async function halfSentGet(baseUrl: string, path: string) {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n`);
  return {
    async complete() {
      socket.write("\r\n");
      await ended;
      const raw = Buffer.concat(chunks).toString("utf8");
      const [head = "", body = ""] = raw.split("\r\n\r\n");
      return { status: Number(head.split(" ")[1]), body };
    },
  };
}
