/**
 * Slow clients on PORT (issue 25 item 2.2, slowloris): a request whose head, body or whole
 * arrives too slowly is cut off, an idle keep-alive connection is closed, and connections past
 * the cap are refused (on GRPC_PORT too); a request that is slow to answer is not. The bounds
 * are set tiny here; the assertions are on what the server did (closed, 408), never on how long
 * it took.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawConnection } from "../support/raw-connection.ts";
import { type RunningService, startService } from "../support/service.ts";

const BOUNDS = {
  SMS_HEADERS_TIMEOUT_MS: "300",
  SMS_BODY_IDLE_TIMEOUT_MS: "400",
  SMS_REQUEST_RECEIVE_TIMEOUT_MS: "1500",
  SMS_KEEP_ALIVE_TIMEOUT_MS: "300",
};

let service: RunningService;

beforeAll(async () => {
  service = await startService(BOUNDS);
});

afterAll(async () => {
  await service?.close();
});

function head(contentLength: number): string {
  const { host } = new URL(service.baseUrl);
  return (
    `POST /sms-batch HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${contentLength}\r\n\r\n`
  );
}

describe("slow clients on PORT", () => {
  it("closes a connection whose body stops after 10 bytes of a declared 90000000", async () => {
    const connection = await rawConnection(service.baseUrl);
    connection.write(`${head(90_000_000)}{"apiKey":`);
    await connection.closed;
    // Nothing was answered as if the request had been read.
    expect(connection.received().toString()).not.toMatch(/^HTTP\/1\.1 [25]/);
  });

  it("answers 408 in the spec's shape when the head does not arrive in time", async () => {
    const connection = await rawConnection(service.baseUrl);
    connection.write("POST /sms-batch HTTP/1.1\r\nHost: x\r\n");
    await connection.closed;
    const answer = connection.received().toString();
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(answer.split("\r\n\r\n")[1] ?? "")).toEqual({
      errors: { request: [expect.any(String)] },
    });
  });

  it("answers 408 when a body that keeps trickling is not whole in time", async () => {
    const connection = await rawConnection(service.baseUrl);
    connection.write(head(90_000_000));
    // A byte every 100 ms: never idle for the body idle timeout, never done either.
    const trickle = setInterval(() => connection.open() && connection.write(" "), 100);
    try {
      await connection.closed;
    } finally {
      clearInterval(trickle);
    }
    expect(connection.received().toString()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("closes a keep-alive connection left idle after its answer", async () => {
    const connection = await rawConnection(service.baseUrl);
    connection.write("GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n");
    await connection.closed;
    expect(connection.received().toString()).toMatch(/^HTTP\/1\.1 200 /);
  });

  it("keeps a connection whose request runs longer than the body idle timeout", async () => {
    const account = await service.createAccount({ credit: 10_000 });
    const messages = Array.from({ length: 3000 }, (_, i) => ({
      to: `+49151${String(10_000_000 + i)}`,
      text: `message ${i}`,
    }));
    const body = JSON.stringify({ ...account, messages });
    const connection = await rawConnection(service.baseUrl);
    // Sent at once: the body is whole before storing 3000 messages starts.
    connection.write(`${head(Buffer.byteLength(body))}${body}`);
    await connection.closed;
    const answer = connection.received().toString();
    expect(answer.slice(0, 40)).toMatch(/^HTTP\/1\.1 200 /);
    expect(JSON.parse(answer.split("\r\n\r\n")[1] ?? "").acceptedCount).toBe(3000);
  });

  it.each([
    ["PORT", "baseUrl"],
    ["GRPC_PORT", "grpcUrl"],
  ] as const)("closes connections to %s past SMS_MAX_CONNECTIONS as they come", async (_, url) => {
    // Default time bounds: the two held connections stay open meanwhile.
    const capped = await startService({ SMS_MAX_CONNECTIONS: "2" });
    try {
      const held = [await rawConnection(capped[url]), await rawConnection(capped[url])];
      const extra = await rawConnection(capped[url]);
      await extra.closed;
      expect(extra.received().length).toBe(0);
      expect(held.map((connection) => connection.open())).toEqual([true, true]);
      for (const connection of held) connection.socket.destroy();
    } finally {
      await capped.close();
    }
  });
});
