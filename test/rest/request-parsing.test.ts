/**
 * Bad input never hurts: every request that cannot be parsed gets 400 {errors: {request: [...]}}
 * (an array on POST /sms-batch too: design table), oversize bodies 413 in the same shape, never
 * a 500, and none of them stores or charges anything.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningService, startService } from "../support/service.ts";
import { type Account, rawPost, storedFor } from "./helpers.ts";

let service: RunningService;
let account: Account;
let before: Awaited<ReturnType<typeof storedFor>>;

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 100 });
  before = await storedFor(service, account.apiKey);
});
afterAll(async () => {
  // Nothing any test here sent was stored or charged.
  if (service) expect(await storedFor(service, account.apiKey)).toEqual(before);
  await service?.close();
});

const JSON_TYPE = "application/json";
const FORM_TYPE = "application/x-www-form-urlencoded";

const credentialsJson = () => `"apiKey":"${account.apiKey}","apiSecret":"${account.apiSecret}"`;
const credentialsForm = () =>
  `apiKey=${account.apiKey}&apiSecret=${encodeURIComponent(account.apiSecret)}`;

/** The endpoints that take a body, and how their parse failures look: the same everywhere. */
const parseFailure = (message: unknown) => ({ errors: { request: [message] } });
const bodyEndpoints = [
  ["/sms", parseFailure],
  ["/sender_names", parseFailure],
  ["/sms-batch", parseFailure],
] as const;

describe.each(bodyEndpoints)("POST %s", (path, shape) => {
  const post = (type: string | undefined, body: string | Buffer) =>
    rawPost(`${service.baseUrl}${path}`, type, body);

  it("refuses JSON that is not valid UTF-8", async () => {
    const body = Buffer.concat([
      Buffer.from(`{"to":"+4915112345678","text":"`),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from(`",${credentialsJson()}}`),
    ]);
    expect(await post(JSON_TYPE, body)).toEqual({
      status: 400,
      body: shape("the body is not valid UTF-8"),
    });
  });

  it("refuses a JSON \\u escape of a lone surrogate (not representable in UTF-8)", async () => {
    const body = `{"to":"+4915112345678","text":"a\\ud800b","messages":[{"text":"\\udc00"}],${credentialsJson()}}`;
    expect(await post(JSON_TYPE, body)).toEqual({
      status: 400,
      body: shape("the body is not valid UTF-8 text: it escapes a lone surrogate"),
    });
  });

  it.each([
    ["a syntax error", '{"to": "+4915112345678",'],
    ["an empty body", ""],
  ])("refuses %s", async (_name, body) => {
    const { status, body: answer } = await post(JSON_TYPE, body);
    expect(status).toBe(400);
    expect(Object.keys(answer.errors)).toEqual(["request"]);
    expect(JSON.stringify(answer.errors.request)).toMatch(/the body is not valid JSON/);
  });

  it.each(["[]", '"text"', "42", "null"])(
    "refuses the JSON value %s: the body must be an object",
    async (body) => {
      expect(await post(JSON_TYPE, body)).toEqual({
        status: 400,
        body: shape("the body must be a JSON object"),
      });
    },
  );

  it.each([
    "text/plain",
    "application/xml",
    "multipart/form-data; boundary=x",
    "application/jsonx",
  ])("refuses the content type %s", async (type) => {
    const { status, body } = await post(type, `{${credentialsJson()}}`);
    expect(status).toBe(400);
    expect(body).toEqual(
      shape(
        expect.stringMatching(
          new RegExp(`^cannot parse a body of content type ${type.replace(/[+;]/g, ".")}`),
        ),
      ),
    );
  });

  it("refuses a body without a content type", async () => {
    const { status, body } = await post(undefined, `{${credentialsJson()}}`);
    expect(status).toBe(400);
    expect(body).toEqual(
      shape(expect.stringMatching(/^the body has no content type: send application\/json/)),
    );
  });

  it("takes the content type case-insensitively, with a charset", async () => {
    const { status, body } = await post(
      "Application/JSON; charset=UTF-8",
      `{${credentialsJson()}}`,
    );
    // Parsed: what is left are missing parameters, not a parse failure.
    expect(status).toBe(400);
    expect(body.errors.request).toBeUndefined();
  });
});

it("a JSON \\u escape of a surrogate pair is the character it encodes", async () => {
  const other = await service.createAccount();
  const body = `{"to":"+4915112345678","text":"\\ud83d\\ude00","apiKey":"${other.apiKey}","apiSecret":"${other.apiSecret}"}`;
  const { status, body: message } = await rawPost(`${service.baseUrl}/sms`, JSON_TYPE, body);
  expect(status).toBe(200);
  expect(message.text).toBe("😀");
});

describe("form bodies", () => {
  it.each(["/sms", "/sender_names"])("POST %s refuses %FF and broken escapes", async (path) => {
    for (const bad of ["text=%FF", "text=%E2%82", "text=%ZZ", "text=%"]) {
      const { status, body } = await rawPost(
        `${service.baseUrl}${path}`,
        FORM_TYPE,
        `to=%2B4915112345678&${bad}&${credentialsForm()}`,
      );
      expect(status).toBe(400);
      expect(body).toEqual({
        errors: { request: ["the form parameters are not correctly percent-encoded UTF-8"] },
      });
    }
  });

  it("POST /sms refuses raw bytes that are not UTF-8", async () => {
    const body = Buffer.concat([
      Buffer.from("to=%2B4915112345678&text="),
      Buffer.from([0xe9]),
      Buffer.from(`&${credentialsForm()}`),
    ]);
    expect(await rawPost(`${service.baseUrl}/sms`, FORM_TYPE, body)).toEqual({
      status: 400,
      body: { errors: { request: ["the body is not valid UTF-8"] } },
    });
  });

  it("POST /sms-batch refuses a form body whatever it holds", async () => {
    const { status, body } = await rawPost(
      `${service.baseUrl}/sms-batch`,
      `${FORM_TYPE}; charset=utf-8`,
      credentialsForm(),
    );
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: {
        request: [expect.stringMatching(/^POST \/sms-batch accepts application\/json only/)],
      },
    });
  });
});

describe("oversize bodies: 413, same shape, nothing read further", () => {
  it("POST /sms: more than 1 MiB", async () => {
    const body = `{"to":"+4915112345678","text":"${"a".repeat(1024 * 1024)}",${credentialsJson()}}`;
    expect(await rawPost(`${service.baseUrl}/sms`, JSON_TYPE, body)).toEqual({
      status: 413,
      body: {
        errors: { request: ["the body is larger than the limit of 1048576 bytes for POST /sms"] },
      },
    });
  });

  it("POST /sender_names: more than 1 MiB, as a form", async () => {
    const body = `exampleMsg=${"a".repeat(1024 * 1024 + 1)}`;
    const { status, body: answer } = await rawPost(
      `${service.baseUrl}/sender_names`,
      FORM_TYPE,
      body,
    );
    expect(status).toBe(413);
    expect(answer.errors.request).toHaveLength(1);
  });

  it("POST /sms-batch: more than SMS_BODY_LIMIT_BYTES (96 MiB by default), refused before it is read", async () => {
    const limit = service.config.bodyLimitBytes;
    expect(limit).toBe(96 * 1024 * 1024);
    const { status, body } = await rawPost(
      `${service.baseUrl}/sms-batch`,
      JSON_TYPE,
      "{}",
      limit + 1,
    );
    expect(status).toBe(413);
    expect(body).toEqual({
      errors: {
        request: [`the body is larger than the limit of ${limit} bytes for POST /sms-batch`],
      },
    });
  });
});

describe("paths", () => {
  it("an unknown path or method is 404 in the same shape", async () => {
    const response = await fetch(`${service.baseUrl}/sms/1`, { method: "PUT" });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      errors: { request: ["no such endpoint: PUT /sms/1"] },
    });
  });

  it("a path that is not valid percent-encoded UTF-8 is 400 errors.request", async () => {
    const response = await fetch(`${service.baseUrl}/sender_names/%FF?apiKey=a&apiSecret=b`, {
      method: "DELETE",
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      errors: { request: ["the request path is not correctly percent-encoded UTF-8"] },
    });
  });
});
