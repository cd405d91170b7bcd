/**
 * The contract's promises to generated clients, over gRPC and Connect on real sockets: whole
 * resources in answers, money in exact integer micro-units (REST keeps its JSON numbers), and
 * the google.rpc error details generic tooling reads: ErrorInfo with a stable reason in the
 * service's domain, BadRequest on proto field paths, RetryInfo when a retry later may succeed.
 */
import { Code, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import { MessageStatus, NotificationState } from "../../gen/sms/v1/types_pb.ts";
import { ERROR_DOMAIN } from "../../src/errors/api-errors.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import type { Account } from "../rest/helpers.ts";
import { failure } from "../support/error-details.ts";
import {
  type FaultyService,
  SHORT_DEADLINES,
  startFaultyService,
} from "../support/faulty-database.ts";
import { adminHeaders, postJson, type RunningService, startService } from "../support/service.ts";

const auth = (who: Account) => ({
  headers: { authorization: basicAuthorization(who.apiKey, who.apiSecret) },
});

describe("resources and money", () => {
  let service: RunningService;
  let session: Http2SessionManager;
  let messaging: ReturnType<typeof createClient<typeof MessagingService>>;

  beforeAll(async () => {
    // A price with a fraction: doubles would drift, micro-units do not.
    service = await startService({ SMS_PRICE_PER_PART: "0.001" });
    session = new Http2SessionManager(service.grpcUrl);
    messaging = createClient(
      MessagingService,
      createGrpcTransport({ baseUrl: service.grpcUrl, sessionManager: session }),
    );
  });
  afterAll(async () => {
    session?.abort();
    await service?.close();
  });

  it("SendMessage answers the whole stored Message: what GetMessage reads, plus the credit left", async () => {
    const who = await service.createAccount({ credit: 1 });
    const { message: sent } = await messaging.sendMessage(
      {
        to: "+4915112345678",
        text: "x".repeat(300),
        ttlSeconds: 120,
        statusCallback: "https://example.com/s",
      },
      auth(who),
    );
    const { message: read } = await messaging.getMessage({ id: sent?.id ?? 0n }, auth(who));
    expect(sent?.createTime).toBeDefined();
    expect(sent).toMatchObject({
      ttlSeconds: 120,
      statusCallback: "https://example.com/s",
      status: MessageStatus.ACCEPTED,
      creditRemainingMicros: 998_000n,
    });
    expect(sent?.segments).toHaveLength(2);
    expect(sent?.notifications[0]?.state).toBe(NotificationState.PENDING);
    // GetMessage: the same resource, real values, and no balance of a past moment.
    expect(read?.creditRemainingMicros).toBeUndefined();
    expect(read).toEqual({ ...sent, creditRemainingMicros: undefined });
  });

  it("credit is exact integer micro-units on RPC and the spec's JSON number on REST", async () => {
    const who = await service.createAccount({ credit: 1 });
    let left = 0n;
    for (let i = 0; i < 3; i++) {
      const { message } = await messaging.sendMessage(
        { to: "+4915112345678", text: "x" },
        auth(who),
      );
      left = message?.creditRemainingMicros ?? -1n;
    }
    expect(left).toBe(997_000n);
    const batch = await messaging.sendBatch(
      {
        messages: [
          { to: "+4915112345678", text: "a" },
          { to: "+4915112345678", text: "b" },
        ],
      },
      auth(who),
    );
    expect(batch.creditRemainingMicros).toBe(995_000n);
    const rest = await postJson(`${service.baseUrl}/sms`, {
      to: "+4915112345678",
      text: "x",
      ...who,
    });
    expect(rest.body.creditRemaining).toBe(0.994);
    const admin = await service.admin.getAccount({ apiKey: who.apiKey }, adminHeaders);
    expect(admin.account?.creditMicros).toBe(994_000n);
  });
});

describe("error details", () => {
  let service: RunningService;
  let account: Account;
  const connect = () => createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" });

  beforeAll(async () => {
    service = await startService({ SMS_RATE_LIMIT_RPS: "2" });
    account = await service.createAccount();
  });
  afterAll(() => service?.close());

  it("every error has ErrorInfo in the service's domain; INVALID_ARGUMENT has BadRequest on proto paths", async () => {
    const messaging = createClient(MessagingService, connect());
    const refused = await failure(
      messaging.sendBatch(
        {
          messages: [{ to: "+4915112345678", text: "x" }],
          statusCallback: "ftp://example.com",
          sender: "Nobody",
        },
        auth(account),
      ),
    );
    expect(refused).toMatchObject({
      code: Code.InvalidArgument,
      domain: ERROR_DOMAIN,
      reason: "FIELD_INVALID",
      fields: { status_callback: expect.any(String), sender: expect.any(String) },
      retryDelay: undefined,
    });
    const names = createClient(SenderNameService, connect());
    expect(await failure(names.deleteSenderName({ name: "Nope" }, auth(account)))).toMatchObject({
      code: Code.NotFound,
      domain: ERROR_DOMAIN,
      reason: "SENDER_NAME_NOT_FOUND",
      resource: { type: "sms.v1.SenderName", name: "Nope" },
    });
    const admin = createClient(AdminService, connect());
    expect(
      await failure(
        admin.getAccount({ apiKey: "nobody" }, { headers: { authorization: "Bearer x" } }),
      ),
    ).toMatchObject({ code: Code.Unauthenticated, reason: "OPERATOR_TOKEN_INVALID" });
    expect(await failure(admin.getAccount({ apiKey: "nobody" }, adminHeaders))).toMatchObject({
      code: Code.NotFound,
      reason: "ACCOUNT_NOT_FOUND",
      fields: { api_key: "no account with apiKey nobody" },
    });
  });

  it("RESOURCE_EXHAUSTED over the account's rate carries RetryInfo, the same delay as Retry-After", async () => {
    const who = await service.createAccount();
    const names = createClient(SenderNameService, connect());
    const answers = await Promise.allSettled(
      Array.from({ length: 8 }, () => names.listSenderNames({}, auth(who))),
    );
    const refusal = answers.find((a) => a.status === "rejected");
    expect(refusal).toBeDefined();
    const refused = await failure(Promise.reject((refusal as PromiseRejectedResult).reason));
    expect(refused).toMatchObject({ code: Code.ResourceExhausted, reason: "RATE_LIMITED" });
    const retryAfter = (refusal as PromiseRejectedResult).reason.metadata.get("retry-after");
    expect(refused.retryDelay).toBe(Number(retryAfter));
    expect(refused.retryDelay).toBeGreaterThan(0);
  });
});

describe("UNAVAILABLE", () => {
  let faulty: FaultyService;

  beforeAll(async () => {
    faulty = await startFaultyService(SHORT_DEADLINES);
  });
  afterAll(() => faulty?.close());

  it("a database that does not answer is UNAVAILABLE with RetryInfo, reason DATABASE_UNAVAILABLE", async () => {
    const who = await faulty.service.createAccount();
    const messaging = createClient(
      MessagingService,
      createConnectTransport({ baseUrl: faulty.service.baseUrl, httpVersion: "1.1" }),
    );
    faulty.proxy.blackhole();
    const refused = await failure(messaging.getMessage({ id: 1n }, auth(who)));
    faulty.proxy.restore();
    expect(refused).toMatchObject({
      code: Code.Unavailable,
      domain: ERROR_DOMAIN,
      reason: "DATABASE_UNAVAILABLE",
      retryDelay: 3,
    });
  });
});
