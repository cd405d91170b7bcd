/**
 * Rate limits (issue 11, defect 14; docs/design.md "Idempotency and rate limits"): per account and
 * instance at most SMS_RATE_LIMIT_RPS requests a second, bursts to twice that; failed
 * authentications per client address at most SMS_AUTH_FAILURES_PER_MIN. Over either: 429 with
 * Retry-After, RateLimit-Policy and RateLimit, the spec's error shape (a string on POST
 * /sms-batch), and RESOURCE_EXHAUSTED with the same hint on Connect and gRPC.
 */
import http from "node:http";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import { ConfigError, loadConfig } from "../../src/config/config.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { type Account, storedFor, withQuery } from "../rest/helpers.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(url, init);
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** GET /sender_names as `who`, from `localAddress` (any 127.x.y.z reaches the loopback listener). */
function listFrom(service: RunningService, who: Account, localAddress: string): Promise<Answer> {
  const url = `${service.baseUrl}/sender_names?${new URLSearchParams({ ...who })}`;
  return new Promise((resolve, reject) => {
    http
      .get(url, { localAddress }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: new Headers(response.headers as Record<string, string>),
            body: JSON.parse(Buffer.concat(chunks).toString("utf8")),
          }),
        );
      })
      .on("error", reject);
  });
}

function expectRefusal(answer: Answer, policy: string): void {
  expect(answer.status).toBe(429);
  const retryAfter = Number(answer.headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(answer.headers.get("ratelimit-policy")).toBe(policy);
  expect(answer.headers.get("ratelimit")).toMatch(
    new RegExp(`^"${policy.split(";")[0]?.replaceAll('"', "")}";r=0;t=${retryAfter}$`),
  );
}

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  return call.then(
    () => {
      throw new Error("the call succeeded");
    },
    (e: unknown) => ConnectError.from(e),
  );
}

describe("configuration", () => {
  it("defaults to 100 requests a second per account and 30 failed authentications a minute", () => {
    const config = loadConfig({});
    expect(config.rateLimitRps).toBe(100);
    expect(config.authFailuresPerMin).toBe(30);
    expect(loadConfig({ SMS_RATE_LIMIT_RPS: "0", SMS_AUTH_FAILURES_PER_MIN: "0" })).toMatchObject({
      rateLimitRps: 0,
      authFailuresPerMin: 0,
    });
  });

  it("refuses values that are not whole numbers, naming the variable", () => {
    expect(() =>
      loadConfig({ SMS_RATE_LIMIT_RPS: "fast", SMS_AUTH_FAILURES_PER_MIN: "-1" }),
    ).toThrow(ConfigError);
    try {
      loadConfig({ SMS_RATE_LIMIT_RPS: "fast", SMS_AUTH_FAILURES_PER_MIN: "-1" });
    } catch (error) {
      expect((error as ConfigError).problems.join("\n")).toMatch(
        /SMS_RATE_LIMIT_RPS.*\n.*SMS_AUTH_FAILURES_PER_MIN/,
      );
    }
  });
});

describe("requests per account: 5 a second, bursts of 10", () => {
  let service: RunningService;
  let account: Account;
  let other: Account;
  const sessions: Http2SessionManager[] = [];

  beforeAll(async () => {
    service = await startService({ SMS_RATE_LIMIT_RPS: "5" });
    [account, other] = await Promise.all([service.createAccount(), service.createAccount()]);
  });
  afterAll(async () => {
    for (const session of sessions) session.abort();
    await service?.close();
  });

  it("a burst beyond the allowance is refused with 429 and the retry hint; other accounts go on", async () => {
    const answers = await Promise.all(
      Array.from({ length: 30 }, () =>
        withQuery("GET", `${service.baseUrl}/sender_names`, { ...account }),
      ),
    );
    const ok = answers.filter((a) => a.status === 200).length;
    expect(ok).toBeGreaterThanOrEqual(10);
    expect(ok).toBeLessThan(30);
    expect(answers.filter((a) => a.status !== 200).every((a) => a.status === 429)).toBe(true);

    const refused = await call(
      `${service.baseUrl}/sender_names?${new URLSearchParams({ ...account })}`,
    );
    expectRefusal(refused, '"account";q=5;w=1');
    expect(refused.body).toEqual({
      errors: { request: [expect.stringMatching(/^too many requests for this account/)] },
    });

    expect((await withQuery("GET", `${service.baseUrl}/sender_names`, { ...other })).status).toBe(
      200,
    );

    // After the time it names, the account is served again.
    await sleep(Number(refused.headers.get("retry-after")) * 1000);
    expect((await withQuery("GET", `${service.baseUrl}/sender_names`, { ...account })).status).toBe(
      200,
    );
  });

  it("refused sends store and charge nothing; POST /sms-batch answers the string shape", async () => {
    const who = await service.createAccount({ credit: 100 });
    const sends = await Promise.all(
      Array.from({ length: 25 }, () =>
        postJson(`${service.baseUrl}/sms`, { to: "+4915112345678", text: "hi", ...who }),
      ),
    );
    const accepted = sends.filter((s) => s.status === 200).length;
    expect(accepted).toBeGreaterThanOrEqual(10);
    expect(sends.some((s) => s.status === 429)).toBe(true);
    expect(await storedFor(service, who.apiKey)).toMatchObject({
      messages: accepted,
      credit: 100 - accepted,
    });

    const batches = await Promise.all(
      Array.from({ length: 25 }, () =>
        call(`${service.baseUrl}/sms-batch`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ messages: [{ to: "+4915112345678", text: "hi" }], ...who }),
        }),
      ),
    );
    const refused = batches.find((b) => b.status === 429);
    if (!refused) throw new Error("no batch was refused");
    expectRefusal(refused, '"account";q=5;w=1');
    expect(refused.body).toEqual({
      errors: { request: expect.stringMatching(/^too many requests for this account/) },
    });
    const batchesAccepted = batches.filter((b) => b.status === 200).length;
    expect(await storedFor(service, who.apiKey)).toMatchObject({
      batches: batchesAccepted,
      messages: accepted + batchesAccepted,
    });
  });

  it.each([
    ["Connect", () => createConnectTransport({ baseUrl: service.grpcUrl, httpVersion: "2" })],
    [
      "gRPC",
      () => {
        const sessionManager = new Http2SessionManager(service.grpcUrl);
        sessions.push(sessionManager);
        return createGrpcTransport({ baseUrl: service.grpcUrl, sessionManager });
      },
    ],
  ])(
    "over %s the refusal is RESOURCE_EXHAUSTED with retry-after in its metadata",
    async (_name, transport) => {
      const who = await service.createAccount();
      const client = createClient(SenderNameService, transport());
      const headers = { authorization: basicAuthorization(who.apiKey, who.apiSecret) };
      const outcomes = await Promise.allSettled(
        Array.from({ length: 30 }, () => client.listSenderNames({}, { headers })),
      );
      const refused = outcomes
        .filter((o) => o.status === "rejected")
        .map((o) => ConnectError.from((o as PromiseRejectedResult).reason));
      expect(refused.length).toBeGreaterThan(0);
      for (const error of refused) {
        expect(error.code).toBe(Code.ResourceExhausted);
        expect(Number(error.metadata.get("retry-after"))).toBeGreaterThanOrEqual(1);
        expect(error.metadata.get("ratelimit-policy")).toBe('"account";q=5;w=1');
      }
    },
  );
});

describe("failed authentications per client address: 3 a minute", () => {
  let service: RunningService;
  let account: Account;

  beforeAll(async () => {
    service = await startService({ SMS_AUTH_FAILURES_PER_MIN: "3" });
    account = await service.createAccount();
  });
  afterAll(() => service?.close());

  it("after 3 wrong secrets the address is refused, right credentials too; another address is not", async () => {
    const wrong = { ...account, apiSecret: "not-the-secret" };
    for (let i = 0; i < 3; i++) {
      expect((await listFrom(service, wrong, "127.0.0.3")).status).toBe(401);
    }
    const refused = await listFrom(service, account, "127.0.0.3");
    expectRefusal(refused, '"auth-failures";q=3;w=60');
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(15);
    expect(refused.body).toEqual({
      errors: {
        request: [expect.stringMatching(/^too many failed authentications from this address/)],
      },
    });
    expect((await listFrom(service, account, "127.0.0.4")).status).toBe(200);
  });

  it("a wrong operator token counts too, and Connect answers RESOURCE_EXHAUSTED", async () => {
    // fetch and the Connect client come from 127.0.0.1, which has failed nothing yet.
    const admin = createClient(
      (await import("../../gen/sms/admin/v1/admin_pb.ts")).AdminService,
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    );
    const wrongToken = { headers: { authorization: "Bearer not-the-token" } };
    for (let i = 0; i < 3; i++) {
      expect((await failure(admin.getAccount({ apiKey: account.apiKey }, wrongToken))).code).toBe(
        Code.Unauthenticated,
      );
    }
    const senderNames = createClient(
      SenderNameService,
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    );
    const error = await failure(
      senderNames.listSenderNames(
        {},
        { headers: { authorization: basicAuthorization(account.apiKey, account.apiSecret) } },
      ),
    );
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(error.metadata.get("ratelimit-policy")).toBe('"auth-failures";q=3;w=60');
  });
});
