/**
 * Every answer of the REST port (PORT) is in the spec's error shape `{errors: {...}}`, including
 * what the framework and Node's HTTP parser refuse before any route runs. Parse failures are
 * `{errors: {request: [msg]}}` on every endpoint, POST /sms-batch included (design table).
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "../support/service.ts";
import { type Account, rawPost, storedFor } from "./helpers.ts";

let service: RunningService;
let account: Account;

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 100 });
});
afterAll(() => service?.close());

/** Writes `request` as is on a new connection; the answer's status line, headers and body. */
function rawExchange(request: string | Buffer) {
  const { port } = new URL(service.baseUrl);
  return new Promise<{ status: number; headers: string; body: any }>((resolve, reject) => {
    const socket = net.connect(Number(port), "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", () => {}); // the server closes after refusing: the answer is what counts
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const [head = "", body = ""] = text.split("\r\n\r\n", 2);
      const status = Number(head.match(/^HTTP\/1\.1 (\d{3})/)?.[1] ?? 0);
      if (!status) reject(new Error(`no HTTP answer: ${JSON.stringify(text)}`));
      else resolve({ status, headers: head, body: body ? JSON.parse(body) : undefined });
    });
    socket.end(request);
  });
}

const requestErrors = { errors: { request: [expect.any(String)] } };

describe("refused by Node's HTTP parser, answered in the spec's shape", () => {
  it("a method that is not an HTTP token", async () => {
    const answer = await rawExchange("G@T /health HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      errors: { request: ["the request method is not a valid HTTP method"] },
    });
    expect(answer.headers).toMatch(/content-type: application\/json/i);
  });

  it("request smuggling: Content-Length together with Transfer-Encoding", async () => {
    const answer = await rawExchange(
      "POST /sms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /health HTTP/1.1\r\n\r\n",
    );
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual(requestErrors);
  });

  it("a malformed chunked body", async () => {
    const answer = await rawExchange(
      "POST /sms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    );
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual(requestErrors);
  });

  it("headers larger than the server accepts: 431", async () => {
    const answer = await rawExchange(
      `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(64 * 1024)}\r\n\r\n`,
    );
    expect(answer.status).toBe(431);
    expect(answer.body).toEqual({
      errors: { request: ["the request headers are larger than the server accepts"] },
    });
  });
});

describe("refused by the framework, answered in the spec's shape", () => {
  it("an unsupported method on a REST path is 404 errors.request", async () => {
    const answer = await rawExchange("PATCH /sms HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect(answer.status).toBe(404);
    expect(answer.body).toEqual({ errors: { request: ["no such endpoint: PATCH /sms"] } });
  });

  it("a Connect method with a content type Connect does not take", async () => {
    const response = await fetch(`${service.baseUrl}/sms.v1.MessagingService/SendMessage`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "hello",
    });
    expect(response.status).toBe(415);
    expect(await response.json()).toEqual({
      errors: {
        request: [
          expect.stringMatching(
            /^cannot parse a body of content type text\/plain: .*application\/proto/,
          ),
        ],
      },
    });
  });

  it("a REST endpoint sent a Connect or gRPC content type is a parse failure", async () => {
    for (const type of ["application/connect+proto", "application/grpc", "application/proto"]) {
      const response = await rawPost(`${service.baseUrl}/sms`, type, "\x0a\x01x");
      expect(response).toEqual({
        status: 400,
        body: {
          errors: {
            request: [
              `cannot parse a body of content type ${type}: send application/json or application/x-www-form-urlencoded`,
            ],
          },
        },
      });
    }
  });
});

describe("JSON holding __proto__", () => {
  it("is JSON: the key is dropped like any unknown parameter and the request is read", async () => {
    const before = await storedFor(service, account.apiKey);
    const body = `{"__proto__":{"to":"+4915100000000"},"constructor":{"prototype":{"x":1}},"to":"+4915112345678","text":"hi","apiKey":"${account.apiKey}","apiSecret":"${account.apiSecret}"}`;
    const { status, body: message } = await rawPost(
      `${service.baseUrl}/sms`,
      "application/json",
      body,
    );
    expect(status).toBe(200);
    expect(message).toMatchObject({ to: "+4915112345678", text: "hi", status: "ACCEPTED" });
    expect((await storedFor(service, account.apiKey)).messages).toBe(before.messages + 1);
  });

  it("is never called 'not valid JSON'", async () => {
    const body = `{"__proto__":{"apiKey":"x"}}`;
    const { status, body: answer } = await rawPost(
      `${service.baseUrl}/sms`,
      "application/json",
      body,
    );
    expect(status).toBe(400);
    expect(JSON.stringify(answer)).not.toMatch(/not valid JSON/);
    expect(answer.errors).toMatchObject({
      to: ["to cannot be empty"],
      apiKey: ["apiKey cannot be empty"],
    });
  });

  it("a form key __proto__ is an unknown parameter, not the prototype", async () => {
    const { status, body } = await rawPost(
      `${service.baseUrl}/sender_names`,
      "application/x-www-form-urlencoded",
      "__proto__=x&name=Shop",
    );
    expect(status).toBe(400);
    expect(body.errors.name).toBeUndefined();
    expect(body.errors.purpose).toEqual(["purpose cannot be empty"]);
  });
});

describe("POST /sms-batch: parse failures in the array shape, parameters as strings", () => {
  const batch = (type: string | undefined, body: string) =>
    rawPost(`${service.baseUrl}/sms-batch`, type, body);

  it.each([
    ["a JSON syntax error", "application/json", '{"messages": ['],
    ["a form body", "application/x-www-form-urlencoded", "messages=x"],
    ["no content type", undefined, "{}"],
    ["a JSON array", "application/json", "[]"],
  ])("%s is {errors: {request: [msg]}}", async (_name, type, body) => {
    expect(await batch(type, body)).toEqual({ status: 400, body: requestErrors });
  });

  it("a body over the limit is 413 in the array shape", async () => {
    const limit = service.config.bodyLimitBytes;
    expect(
      await rawPost(`${service.baseUrl}/sms-batch`, "application/json", "{}", limit + 1),
    ).toEqual({
      status: 413,
      body: {
        errors: {
          request: [`the body is larger than the limit of ${limit} bytes for POST /sms-batch`],
        },
      },
    });
  });

  it("a missing parameter stays a string", async () => {
    expect(await batch("application/json", `{"apiKey":"k","apiSecret":"s"}`)).toEqual({
      status: 400,
      body: { errors: { messages: "messages cannot be empty" } },
    });
  });

  it("wrong credentials stay a string", async () => {
    const answer = await batch(
      "application/json",
      `{"messages":[{"to":"+4915112345678","text":"x"}],"apiKey":"${account.apiKey}","apiSecret":"wrong"}`,
    );
    expect(answer).toEqual({ status: 401, body: { errors: { request: expect.any(String) } } });
  });
});

describe("the two-way routes (inbound messages, opt-outs) answer in the spec's shape", () => {
  it("without credentials: 400 naming both, on every one of them", async () => {
    for (const [method, path] of [
      ["GET", "/inbound"],
      ["GET", "/inbound/1"],
      ["GET", "/opt-outs"],
      ["GET", "/opt-outs/changes"],
      ["DELETE", "/opt-outs/%2B4915112345678"],
    ] as const) {
      const response = await fetch(`${service.baseUrl}${path}`, { method });
      expect(response.status, `${method} ${path}`).toBe(400);
      expect(await response.json()).toEqual({
        errors: { apiKey: ["apiKey cannot be empty"], apiSecret: ["apiSecret cannot be empty"] },
      });
    }
  });

  it("POST /opt-outs: a body that cannot be parsed is errors.request, a missing number errors.number", async () => {
    expect(await rawPost(`${service.baseUrl}/opt-outs`, "application/json", "{")).toEqual({
      status: 400,
      body: requestErrors,
    });
    const missing = await rawPost(
      `${service.baseUrl}/opt-outs`,
      "application/json",
      JSON.stringify({ apiKey: account.apiKey, apiSecret: account.apiSecret }),
    );
    expect(missing).toEqual({
      status: 400,
      body: { errors: { number: ["number cannot be empty"] } },
    });
    const wrong = await rawPost(
      `${service.baseUrl}/opt-outs`,
      "application/x-www-form-urlencoded",
      `number=%2B4915112345678&apiKey=${account.apiKey}&apiSecret=wrong`,
    );
    expect(wrong).toEqual({ status: 401, body: requestErrors });
  });
});
