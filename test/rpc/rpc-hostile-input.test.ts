/**
 * Connect, gRPC and gRPC-Web on both ports against hostile bodies: a caller without credentials
 * is refused UNAUTHENTICATED before its body is read; bodies over the read limit, compressed or
 * inflated, are RESOURCE_EXHAUSTED; bytes that are no valid protobuf are INVALID_ARGUMENT, never
 * INTERNAL.
 */
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService, SendMessageRequestSchema } from "../../gen/sms/v1/messaging_pb.ts";
import { RPC_READ_MAX_BYTES } from "../../src/domain/limits.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import type { Account } from "../rest/helpers.ts";
import { type RunningService, startService } from "../support/service.ts";

let service: RunningService;
let account: Account;
const sessions: Http2SessionManager[] = [];

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 10 });
});
afterAll(async () => {
  for (const manager of sessions) manager.abort();
  await service?.close();
});

const SEND = "/sms.v1.MessagingService/SendMessage";
const auth = () => basicAuthorization(account.apiKey, account.apiSecret);

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  trailers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One HTTP/2 request on the gRPC port; the body is written unless the server answers first. */
function h2Request(headers: Record<string, string>, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(service.grpcUrl);
    session.on("error", () => {});
    const stream = session.request({ ":method": "POST", ":path": SEND, ...headers });
    const chunks: Buffer[] = [];
    let responseHeaders: Answer["headers"] = {};
    let trailers: Answer["trailers"] = {};
    stream.on("response", (h) => {
      responseHeaders = h;
    });
    stream.on("trailers", (t) => {
      trailers = t;
    });
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", () => {}); // a refused upload: the answer is what counts
    stream.on("close", () => {
      session.close();
      const status = Number(responseHeaders[":status"]);
      if (!status) reject(new Error("no answer"));
      else resolve({ status, headers: responseHeaders, trailers, body: Buffer.concat(chunks) });
    });
    stream.end(body);
  });
}

/** The code of a Connect unary error answer, or of a gRPC answer's status. */
function codeOf(answer: Answer): string {
  const grpcStatus = answer.trailers["grpc-status"] ?? answer.headers["grpc-status"];
  if (grpcStatus !== undefined) {
    return Number(grpcStatus) === 0 ? "Ok" : (Code[Number(grpcStatus)] ?? String(grpcStatus));
  }
  return JSON.parse(answer.body.toString("utf8")).code;
}

/** A gRPC length-prefixed message: flag byte, 4-byte length, data. */
function envelope(data: Buffer, compressed = false): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(compressed ? 1 : 0, 0);
  head.writeUInt32BE(data.length, 1);
  return Buffer.concat([head, data]);
}

const validRequest = () =>
  Buffer.from(
    toBinary(
      SendMessageRequestSchema,
      create(SendMessageRequestSchema, { to: "+4915112345678", text: "hi" }),
    ),
  );

describe("credentials are checked before the body is read", () => {
  it("Connect without credentials: UNAUTHENTICATED (not INVALID_ARGUMENT)", async () => {
    const transport = createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" });
    const error = await createClient(MessagingService, transport)
      .sendMessage({ to: "+4915112345678", text: "x" })
      .catch((e) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unauthenticated);
  });

  it("gRPC without credentials: UNAUTHENTICATED", async () => {
    const manager = new Http2SessionManager(service.grpcUrl);
    sessions.push(manager);
    const transport = createGrpcTransport({ baseUrl: service.grpcUrl, sessionManager: manager });
    const error = await createClient(MessagingService, transport)
      .sendMessage({ to: "+4915112345678", text: "x" })
      .catch((e) => ConnectError.from(e));
    expect((error as ConnectError).code).toBe(Code.Unauthenticated);
  });

  it("an unauthenticated 64 MiB body announced by Content-Length is refused unread", async () => {
    // Only the announcement is sent: a server that waited for the body would never answer.
    const answer = await new Promise<Answer>((resolve) => {
      const session = http2.connect(service.grpcUrl);
      session.on("error", () => {});
      const stream = session.request({
        ":method": "POST",
        ":path": SEND,
        "content-type": "application/json",
        "content-length": String(64 * 1024 * 1024),
      });
      const chunks: Buffer[] = [];
      let headers: Answer["headers"] = {};
      stream.on("response", (h) => {
        headers = h;
      });
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("error", () => {});
      stream.on("close", () => {
        session.close();
        resolve({
          status: Number(headers[":status"]),
          headers,
          trailers: {},
          body: Buffer.concat(chunks),
        });
      });
      stream.write("{");
    });
    expect(answer.status).toBe(401);
    expect(codeOf(answer)).toBe("unauthenticated");
  });
});

describe.each([
  ["HTTP/2 (GRPC_PORT)", () => service.grpcUrl, "2" as const],
  ["HTTP/1.1 (PORT)", () => service.baseUrl, "1.1" as const],
])("read limits over %s", (_name, baseUrl, httpVersion) => {
  const post = async (headers: Record<string, string>, body: Buffer) => {
    if (httpVersion === "2") return h2Request(headers, body);
    const response = await fetch(`${baseUrl()}${SEND}`, {
      method: "POST",
      headers,
      body: new Uint8Array(body),
    });
    return {
      status: response.status,
      headers: Object.fromEntries(response.headers),
      trailers: {},
      body: Buffer.from(await response.arrayBuffer()),
    };
  };

  it("an authenticated JSON body over the limit is resource_exhausted", async () => {
    const body = Buffer.from(
      JSON.stringify({ to: "+4915112345678", text: "a".repeat(RPC_READ_MAX_BYTES) }),
    );
    const answer = await post({ "content-type": "application/json", authorization: auth() }, body);
    expect(answer.status).toBe(429);
    expect(codeOf(answer)).toBe("resource_exhausted");
  });

  it("a gzip bomb (small compressed, 64 MiB inflated) is resource_exhausted", async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
    expect(bomb.length).toBeLessThan(RPC_READ_MAX_BYTES);
    const answer = await post(
      { "content-type": "application/json", "content-encoding": "gzip", authorization: auth() },
      bomb,
    );
    expect(answer.status).toBe(429);
    expect(codeOf(answer)).toBe("resource_exhausted");
  });
});

it("gRPC: a compressed message inflating past the limit is RESOURCE_EXHAUSTED", async () => {
  const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0));
  const answer = await h2Request(
    {
      "content-type": "application/grpc",
      "grpc-encoding": "gzip",
      te: "trailers",
      authorization: auth(),
    },
    envelope(bomb, true),
  );
  expect(codeOf(answer)).toBe("ResourceExhausted");
});

describe("bytes that are no valid protobuf are INVALID_ARGUMENT", () => {
  const nested = (depth: number): Buffer => {
    // Field 1 of SendMessageRequest is a string; an unknown length-delimited field 15 nested in
    // itself as groups would be skipped: use start-group tags, nested `depth` deep.
    const open = Buffer.alloc(depth, 0x7b); // field 15, wire type 3 (start group)
    const close = Buffer.alloc(depth, 0x7c); // field 15, wire type 4 (end group)
    return Buffer.concat([open, close]);
  };
  const malformed: [string, Buffer][] = [
    ["a truncated length-delimited field", Buffer.from([0x0a, 0xff, 0xff])],
    ["garbage", Buffer.from("\xff\xfe\xfd\xfc garbage \x00\x01", "latin1")],
    ["a wrong wire type (fixed64 where a string belongs)", Buffer.from([0x09, 1, 2, 3])],
    ["an invalid wire type 7", Buffer.from([0x0f, 0x00])],
    ["groups nested 10000 deep", nested(10_000)],
    ["a string that is not UTF-8", Buffer.from([0x12, 0x02, 0xc3, 0x28])],
  ];

  it.each(malformed)("Connect (application/proto, PORT): %s", async (_name, bytes) => {
    const response = await fetch(`${service.baseUrl}${SEND}`, {
      method: "POST",
      headers: { "content-type": "application/proto", authorization: auth() },
      body: new Uint8Array(bytes),
    });
    expect(response.status).toBe(400);
    expect((await response.json()).code).toBe("invalid_argument");
  });

  it.each(malformed)("gRPC (GRPC_PORT): %s", async (_name, bytes) => {
    const answer = await h2Request(
      { "content-type": "application/grpc", te: "trailers", authorization: auth() },
      envelope(bytes),
    );
    expect(codeOf(answer)).toBe("InvalidArgument");
  });

  it.each(malformed)("gRPC-Web (PORT): %s", async (_name, bytes) => {
    const response = await fetch(`${service.baseUrl}${SEND}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", authorization: auth() },
      body: new Uint8Array(envelope(bytes)),
    });
    const body = Buffer.from(await response.arrayBuffer());
    // The trailers are the last frame of the body (flag 0x80).
    const trailer = body.subarray(body.lastIndexOf(0x80) + 5).toString("latin1");
    expect(trailer).toMatch(/grpc-status: ?3\b/);
  });

  it("a valid message still goes through", async () => {
    const answer = await h2Request(
      { "content-type": "application/grpc", te: "trailers", authorization: auth() },
      envelope(validRequest()),
    );
    expect(codeOf(answer)).toBe("Ok");
  });
});
