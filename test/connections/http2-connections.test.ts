/**
 * Idle and hostile HTTP/2 connections on GRPC_PORT (issue 25 item 2.3): a bare TCP connection and
 * one that sent only the HTTP/2 preface are closed, as is a connection left with no stream open;
 * a request body that stops arriving has its stream reset; streams per connection are bounded
 * (SETTINGS_MAX_CONCURRENT_STREAMS); the connection cap is tested with PORT's
 * (slow-clients.test.ts). The bounds are set tiny here; the assertions are on what the server
 * did, never on how long it took.
 */
import { once } from "node:events";
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SendBatchRequestSchema, SendBatchResponseSchema } from "../../gen/sms/v1/messaging_pb.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { rawConnection } from "../support/raw-connection.ts";
import { type RunningService, startService } from "../support/service.ts";

const PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
// An empty SETTINGS frame: length 0, type 4, no flags, stream 0.
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);

let service: RunningService;
let account: { apiKey: string; apiSecret: string } | undefined;

beforeAll(async () => {
  service = await startService({
    SMS_HEADERS_TIMEOUT_MS: "300",
    SMS_BODY_IDLE_TIMEOUT_MS: "300",
    SMS_REQUEST_RECEIVE_TIMEOUT_MS: "1500",
    SMS_KEEP_ALIVE_TIMEOUT_MS: "300",
    SMS_GRPC_MAX_STREAMS: "4",
  });
});

afterAll(async () => {
  await service?.close();
});

function connectH2(url: string): http2.ClientHttp2Session {
  const session = http2.connect(url);
  session.on("error", () => undefined);
  return session;
}

describe("idle connections on GRPC_PORT", () => {
  it("closes a bare TCP connection that never sends the preface", async () => {
    const connection = await rawConnection(service.grpcUrl);
    await connection.closed;
  });

  it("closes a connection that sent only the preface", async () => {
    const connection = await rawConnection(service.grpcUrl);
    connection.write(PREFACE);
    connection.write(EMPTY_SETTINGS);
    await connection.closed;
    // The server spoke HTTP/2 (its SETTINGS frame, type 4) before it closed.
    expect(connection.received()[3]).toBe(4);
  });

  it("closes a connection once no stream has been open for the keep-alive timeout", async () => {
    const session = connectH2(service.grpcUrl);
    const goaway = once(session, "goaway");
    const stream = session.request({ ":path": "/health/live" });
    stream.resume();
    const [headers] = (await once(stream, "response")) as [http2.IncomingHttpHeaders];
    expect(headers[":status"]).toBeDefined();
    await once(stream, "close");
    await goaway;
    await once(session, "close");
  });

  it("keeps a connection whose call runs past the keep-alive and body idle timeouts", async () => {
    account ??= await service.createAccount({ credit: 10_000 });
    // Encoded before connecting, so the stream opens within the headers timeout whatever the load.
    const body = toBinary(
      SendBatchRequestSchema,
      create(SendBatchRequestSchema, {
        messages: Array.from({ length: 3000 }, (_, i) => ({
          to: `+49151${String(10_000_000 + i)}`,
          text: `message ${i}`,
        })),
      }),
    );
    const session = connectH2(service.grpcUrl);
    const stream = session.request({
      ":method": "POST",
      ":path": "/sms.v1.MessagingService/SendBatch",
      "content-type": "application/proto",
      authorization: basicAuthorization(account.apiKey, account.apiSecret),
    });
    stream.end(body);
    const chunks: Buffer[] = [];
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    let headers: http2.IncomingHttpHeaders = {};
    stream.on("response", (received) => {
      headers = received;
    });
    await once(stream, "close");
    // Storing 3000 messages kept the stream quiet for longer than either bound: not reset.
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    expect(headers[":status"], Buffer.concat(chunks).toString()).toBe(200);
    expect(fromBinary(SendBatchResponseSchema, Buffer.concat(chunks)).batch?.acceptedCount).toBe(
      3000,
    );
    session.close();
  });
});

/** An authenticated SendBatch whose body is the test's to send (or not). */
async function batchCall(session: http2.ClientHttp2Session): Promise<http2.ClientHttp2Stream> {
  account ??= await service.createAccount({ credit: 10_000 });
  const stream = session.request({
    ":method": "POST",
    ":path": "/sms.v1.MessagingService/SendBatch",
    "content-type": "application/proto",
    authorization: basicAuthorization(account.apiKey, account.apiSecret),
  });
  stream.on("error", () => undefined);
  stream.resume();
  return stream;
}

describe("requests and streams on GRPC_PORT", () => {
  it("resets a stream whose request body stops arriving, and keeps the connection", async () => {
    const session = connectH2(service.grpcUrl);
    const stream = await batchCall(session);
    stream.write(Buffer.alloc(10));
    await once(stream, "close");
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(session.closed || session.destroyed).toBe(false);
    session.close();
  });

  it("resets a stream whose body keeps trickling past the request timeout", async () => {
    const session = connectH2(service.grpcUrl);
    const stream = await batchCall(session);
    const trickle = setInterval(() => !stream.closed && stream.write(Buffer.alloc(1)), 100);
    try {
      await once(stream, "close");
    } finally {
      clearInterval(trickle);
    }
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    session.close();
  });

  it("announces SETTINGS_MAX_CONCURRENT_STREAMS of SMS_GRPC_MAX_STREAMS", async () => {
    const session = connectH2(service.grpcUrl);
    await once(session, "remoteSettings");
    expect(session.remoteSettings.maxConcurrentStreams).toBe(4);
    session.close();
  });
});
