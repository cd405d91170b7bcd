/**
 * Issue 25, items 2.1 and 2.4: no body, with credentials or without, may stall everyone. JSON
 * nested too deep or holding too many values is refused as it arrives, before it is parsed and
 * before the rest of it is read; bodies over 1 MiB are bounded per client address and in all,
 * refused before they are read; a large body is parsed while the service goes on answering.
 */
import http from "node:http";
import http2 from "node:http2";
import type { Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { type Account, storedFor } from "../rest/helpers.ts";
import { type RunningService, startService } from "../support/service.ts";

let service: RunningService;
let account: Account;

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 100 });
});
afterAll(() => service?.close());

const SEND_BATCH = "/sms.v1.MessagingService/SendBatch";
const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const deepBatch = (credentials: object) =>
  `{${Object.entries(credentials)
    .map(([k, v]) => `"${k}":"${v}",`)
    .join("")}"messages":[{"to":"+4915112345678","text":"x"}],"extra":${nested(4e6)}}`;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/**
 * POSTs the first `sent` bytes of `body` while declaring all of it, and leaves the request open:
 * only a server that answers before the whole body is in can answer at all. `close` aborts it.
 */
function partialPost(
  path: string,
  body: Buffer,
  sent: number,
  options: { localAddress?: string; headers?: http.OutgoingHttpHeaders } = {},
) {
  const request = http.request(`${service.baseUrl}${path}`, {
    method: "POST",
    localAddress: options.localAddress,
    headers: {
      "content-type": "application/json",
      "content-length": body.length,
      ...options.headers,
    },
  });
  const answer = new Promise<Answer>((resolve, reject) => {
    request.on("response", (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (c: Buffer) => chunks.push(c));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: text ? JSON.parse(text) : undefined,
        });
      });
    });
    request.on("error", reject);
  });
  answer.catch(() => {}); // an aborted request's answer is not awaited
  request.write(body.subarray(0, sent));
  return { answer, close: () => request.destroy() };
}

const auth = () => basicAuthorization(account.apiKey, account.apiSecret);

describe("JSON bodies are refused by their shape before they are parsed", () => {
  it("POST /sms-batch nested 4 million deep, wrong secret: 400 before the rest is sent", async () => {
    const before = await storedFor(service, account.apiKey);
    const body = Buffer.from(deepBatch({ apiKey: account.apiKey, apiSecret: "wrong" }));
    const post = partialPost("/sms-batch", body, 256 * 1024);
    const answer = await post.answer;
    post.close();
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      errors: { request: ["the body nests deeper than 32 levels"] },
    });
    expect(answer.headers.connection).toBe("close");
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it("a flat body of 6 million empty objects: 400 before the rest is sent", async () => {
    const body = Buffer.from(`[${"{},".repeat(6e6)}{}]`);
    const post = partialPost("/sms-batch", body, 1024 * 1024);
    const answer = await post.answer;
    post.close();
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      errors: {
        request: ["the body holds more than 100000 values (array elements and object members)"],
      },
    });
  });

  it("POST /sms with a deep unknown parameter, complete: 400 errors.request, nothing stored", async () => {
    const before = await storedFor(service, account.apiKey);
    const response = await fetch(`${service.baseUrl}/sms`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"to":"+4915112345678","text":"x","apiKey":"${account.apiKey}","apiSecret":"${account.apiSecret}","x":${nested(100)}}`,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      errors: { request: ["the body nests deeper than 32 levels"] },
    });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });
});

describe("Connect and gRPC JSON: a deep unknown field is INVALID_ARGUMENT", () => {
  const body = () => Buffer.from(deepBatch({}));

  it("Connect on PORT, authenticated: invalid_argument, nothing stored", async () => {
    const before = await storedFor(service, account.apiKey);
    const response = await fetch(`${service.baseUrl}${SEND_BATCH}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: auth() },
      body: new Uint8Array(body()),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      code: "invalid_argument",
      message: "the body nests deeper than 32 levels",
    });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });

  it("Connect on PORT, gzip-compressed: invalid_argument", async () => {
    const response = await fetch(`${service.baseUrl}${SEND_BATCH}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "content-encoding": "gzip",
        authorization: auth(),
      },
      body: new Uint8Array(gzipSync(body())),
    });
    expect(response.status).toBe(400);
    expect((await response.json()).code).toBe("invalid_argument");
  });

  it("gRPC with the JSON codec on GRPC_PORT: INVALID_ARGUMENT", async () => {
    const message = body();
    const envelope = Buffer.alloc(5);
    envelope.writeUInt32BE(message.length, 1);
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const session = http2.connect(service.grpcUrl);
      session.on("error", reject);
      const stream = session.request({
        ":method": "POST",
        ":path": SEND_BATCH,
        "content-type": "application/grpc+json",
        te: "trailers",
        authorization: auth(),
      });
      let headers: http2.IncomingHttpHeaders = {};
      stream.on("response", (h) => {
        headers = h;
      });
      stream.on("trailers", (t) => resolve({ ...headers, ...t }));
      stream.on("error", () => {});
      stream.on("close", () => {
        session.close();
        resolve(headers);
      });
      stream.resume();
      stream.end(Buffer.concat([envelope, message]));
    });
    expect(trailers["grpc-status"]).toBe("3");
    expect(decodeURIComponent(String(trailers["grpc-message"]))).toBe(
      "the body nests deeper than 32 levels",
    );
  });
});

describe("binary protobuf is counted before it is decoded", () => {
  it("Connect SendBatch of 8 million empty messages: invalid_argument before the rest is sent", async () => {
    const body = Buffer.alloc(16 * 1024 * 1024);
    for (let i = 0; i < body.length; i += 2) body[i] = 0x0a; // messages, length 0
    const post = partialPost(SEND_BATCH, body, 1024 * 1024, {
      headers: { "content-type": "application/proto", authorization: auth() },
    });
    const answer = await post.answer;
    post.close();
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({
      code: "invalid_argument",
      message: "the message holds more than 100000 fields",
    });
  });
});

describe("bodies over 1 MiB are bounded per client address and in all", () => {
  const large = Buffer.alloc(50 * 1024 * 1024, " ");

  it("a third large body from one address is 429 at once, in the spec's shape", async () => {
    const open = [partialPost("/sms-batch", large, 1000), partialPost("/sms-batch", large, 1000)];
    try {
      // The two hold their slots once they are in: a third, after them, has none.
      await new Promise((r) => setTimeout(r, 300));
      const third = partialPost("/sms-batch", large, 0);
      const answer = await third.answer;
      third.close();
      expect(answer.status).toBe(429);
      expect(answer.headers["retry-after"]).toBe("1");
      expect(answer.body).toEqual({
        errors: {
          request:
            "too many large bodies at once from this address: at most 2 over 1 MiB; retry after 1 s",
        },
      });
    } finally {
      for (const post of open) post.close();
    }
  });

  it("a fifth from other addresses is 503 at once; slots free up when bodies end", async () => {
    const open = ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"].map((localAddress) =>
      partialPost("/sms-batch", large, 1000, { localAddress }),
    );
    try {
      await new Promise((r) => setTimeout(r, 300));
      const fifth = partialPost("/sms-batch", large, 0, { localAddress: "127.0.0.4" });
      const answer = await fifth.answer;
      fifth.close();
      expect(answer.status).toBe(503);
      expect(answer.headers["retry-after"]).toBe("1");
      expect(answer.body.errors.request).toMatch(/^the server is reading as many large bodies/);
    } finally {
      for (const post of open) post.close();
    }
    // Their slots are back: a large body is read (and refused for its shape, not for a slot).
    let answer: Answer | undefined;
    for (let attempt = 0; attempt < 50; attempt++) {
      const body = Buffer.from(`{"x":${nested(2e6)}}`);
      const post = partialPost("/sms-batch", body, 64 * 1024, { localAddress: "127.0.0.4" });
      answer = await post.answer;
      post.close();
      if (answer.status !== 503) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(answer?.status).toBe(400);
  });

  it("Connect SendBatch: a third large body from one address is resource_exhausted", async () => {
    const headers = { authorization: auth() };
    const open = [
      partialPost(SEND_BATCH, large, 1000, { headers }),
      partialPost(SEND_BATCH, large, 1000, { headers }),
    ];
    try {
      await new Promise((r) => setTimeout(r, 300));
      const third = partialPost(SEND_BATCH, large, 0, { headers });
      const answer = await third.answer;
      third.close();
      expect(answer.status).toBe(429);
      expect(answer.headers["retry-after"]).toBe("1");
      expect(answer.body).toMatchObject({ code: "resource_exhausted" });
    } finally {
      for (const post of open) post.close();
    }
  });
});

it("/health/live answers while a large body is parsed", async () => {
  // The service runs in this process: its sockets tell when the whole body is in and whether an
  // answer went out. A parse on the main thread answers in the same turn as the body ends.
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => sockets.add(socket);
  service.app.server.on("connection", track);
  // 60 MB of valid-looking JSON that fails only at its last byte: all of it is parsed first.
  const body = Buffer.from(`{"apiKey":"x","apiSecret":"y","note":"${"a".repeat(60e6)}"`);
  try {
    const hostile = new Promise<number>((resolve, reject) => {
      const request = http.request(
        `${service.baseUrl}/sms-batch`,
        { method: "POST", headers: { "content-type": "application/json" } },
        (response) => {
          response.resume();
          response.on("end", () => resolve(response.statusCode ?? 0));
        },
      );
      request.on("error", reject);
      request.end(body);
    });
    let socket: Socket | undefined;
    while (!socket) {
      await new Promise((r) => setTimeout(r, 2));
      socket = [...sockets].find((s) => s.bytesRead >= body.length);
    }
    // All of it is in, and no answer yet: it is being parsed. The service answers meanwhile.
    expect(socket.bytesWritten).toBe(0);
    const live = await fetch(`${service.baseUrl}/health/live`);
    expect(live.status).toBe(200);
    expect(socket.bytesWritten).toBe(0);
    expect(await hostile).toBe(400);
  } finally {
    service.app.server.off("connection", track);
  }
});
