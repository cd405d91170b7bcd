/**
 * The same operations through the generated types over Connect and gRPC (HTTP/2 on GRPC_PORT):
 * MessagingService and SenderNameService, with their error codes, ErrorInfo reasons and
 * BadRequest field violations on proto field paths. One implementation: the rules are those the
 * REST tests check.
 */
import { Code, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import {
  MessageStatus,
  NonDeliveryReason,
  NotificationState,
  SenderNameOwnerType,
  SenderNamePurpose,
} from "../../gen/sms/v1/types_pb.ts";
import { PHONE_NUMBER_ERROR } from "../../src/domain/phone-numbers.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { type Account, creditOf, storedFor } from "../rest/helpers.ts";
import { failure as failed } from "../support/error-details.ts";
import { adminHeaders, type RunningService, startService } from "../support/service.ts";

let service: RunningService;

// HTTP/2 sessions are closed by the client: the server's close waits for open sessions.
const sessions: Http2SessionManager[] = [];
const session = () => {
  const manager = new Http2SessionManager(service.grpcUrl);
  sessions.push(manager);
  return manager;
};

beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  for (const manager of sessions) manager.abort();
  await service?.close();
});

const auth = (who: Account) => ({
  headers: { authorization: basicAuthorization(who.apiKey, who.apiSecret) },
});

/** The error a call failed with, its ErrorInfo reason and its field violations {path: message}. */
async function failure(call: Promise<unknown>) {
  const { code, reason, fields } = await failed(call);
  return { code, reason, fields };
}

const transports: [string, () => Transport][] = [
  [
    "Connect (JSON, HTTP/2)",
    () =>
      createConnectTransport({
        baseUrl: service.grpcUrl,
        httpVersion: "2",
        useBinaryFormat: false,
        sessionManager: session(),
      }),
  ],
  [
    "gRPC (HTTP/2)",
    () => createGrpcTransport({ baseUrl: service.grpcUrl, sessionManager: session() }),
  ],
];

describe.each(transports)("over %s", (_name, transport) => {
  let messaging: ReturnType<typeof createClient<typeof MessagingService>>;
  let senderNames: ReturnType<typeof createClient<typeof SenderNameService>>;
  let account: Account;

  beforeAll(async () => {
    const t = transport();
    messaging = createClient(MessagingService, t);
    senderNames = createClient(SenderNameService, t);
    account = await service.createAccount({ credit: 50 });
  });

  describe("MessagingService", () => {
    it("SendMessage answers the message with its segments and the credit left", async () => {
      const text = `${"a".repeat(66)}😀${"b".repeat(10)}`;
      const { message } = await messaging.sendMessage(
        { to: "+4915112345678", text, ttlSeconds: 60 },
        auth(account),
      );
      expect(message).toMatchObject({
        to: "+4915112345678",
        sender: "SMSINFO",
        text,
        status: MessageStatus.ACCEPTED,
        creditRemainingMicros: 48_000_000n,
        ttlSeconds: 60,
      });
      expect(message?.segments.map((s) => s.text)).toEqual(["a".repeat(66), `😀${"b".repeat(10)}`]);
      const ids = [message?.id, ...(message?.segments.map((s) => s.id) ?? [])];
      expect(new Set(ids).size).toBe(3);
      expect((await service.store.messages.findOne({ _id: Number(message?.id) }))?.ttl).toBe(60);
    });

    it("SendMessage refuses invalid fields with INVALID_ARGUMENT and BadRequest on their proto paths; stores nothing", async () => {
      const before = await storedFor(service, account.apiKey);
      expect(
        await failure(
          messaging.sendMessage(
            { to: "12", text: "", ttlSeconds: 0, sender: "Nobody" },
            auth(account),
          ),
        ),
      ).toEqual({
        code: Code.InvalidArgument,
        reason: "FIELD_INVALID",
        fields: {
          to: PHONE_NUMBER_ERROR,
          text: "text cannot be empty",
          ttl_seconds: "ttl must be an integer from 1 to 21600 seconds",
          sender:
            "from must be the shared sender SMSINFO, an approved sender name of the account or a number assigned to it",
        },
      });
      expect(
        await failure(
          messaging.sendMessage(
            { to: "+4915112345678", text: "x", ttlSeconds: 21601 },
            auth(account),
          ),
        ),
      ).toMatchObject({ code: Code.InvalidArgument, fields: { ttl_seconds: expect.any(String) } });
      expect(
        await failure(
          messaging.sendMessage({ to: "+4915112345678", text: "x".repeat(1531) }, auth(account)),
        ),
      ).toMatchObject({
        code: Code.InvalidArgument,
        fields: { text: expect.stringMatching(/^text is too long/) },
      });
      expect(await storedFor(service, account.apiKey)).toEqual(before);
    });

    it("credentials: missing or wrong is UNAUTHENTICATED, told apart by the ErrorInfo reason", async () => {
      const missing = await failed(messaging.sendMessage({ to: "+4915112345678", text: "x" }));
      expect(missing).toMatchObject({
        code: Code.Unauthenticated,
        reason: "CREDENTIALS_MISSING",
        message: "apiKey cannot be empty; apiSecret cannot be empty",
        fields: {},
      });
      expect(
        await failure(
          messaging.sendMessage(
            { to: "+4915112345678", text: "x" },
            auth({ apiKey: account.apiKey, apiSecret: "wrong" }),
          ),
        ),
      ).toEqual({ code: Code.Unauthenticated, reason: "CREDENTIALS_INVALID", fields: {} });
    });

    it("SendBatch: partial acceptance, credit left; GetBatch, ListBatchMessages and GetMessage read it back", async () => {
      const before = await creditOf(service, account.apiKey);
      const sent = await messaging.sendBatch(
        {
          name: "rpc",
          messages: [
            { to: "+4915100000001", text: "one" },
            { to: "1", text: "bad" },
            { to: "+4915100000002", text: "x".repeat(161), sender: "SMSINFO" },
          ],
        },
        auth(account),
      );
      const batch = sent.batch;
      expect(batch).toMatchObject({
        name: "rpc",
        totalCount: 3,
        acceptedCount: 2,
        rejectedCount: 1,
      });
      expect(sent.creditRemainingMicros).toBe(BigInt((before - 3) * 1_000_000));
      expect(
        sent.errors.map((e) => ({
          index: e.index,
          text: e.text,
          violations: e.fieldViolations.map((v) => [v.field, v.description]),
        })),
      ).toEqual([
        {
          index: 1,
          text: PHONE_NUMBER_ERROR,
          violations: [["messages[1].to", PHONE_NUMBER_ERROR]],
        },
      ]);

      const info = await messaging.getBatch({ id: batch?.id ?? 0n }, auth(account));
      expect(info.batch).toMatchObject({
        id: batch?.id,
        name: "rpc",
        totalCount: 3,
        acceptedCount: 2,
        rejectedCount: 1,
        progress: { sentCount: 0, isActive: true },
      });
      const listed = await messaging.listBatchMessages({ batchId: batch?.id ?? 0n }, auth(account));
      expect(listed.messages.map((m) => [m.to, m.sender, m.status])).toEqual([
        ["+4915100000001", "SMSINFO", MessageStatus.ACCEPTED],
        ["+4915100000002", "SMSINFO", MessageStatus.ACCEPTED],
      ]);
      expect(listed.nextPageToken).toBe("");

      const id = listed.messages[1]?.id ?? 0n;
      const { message } = await messaging.getMessage({ id }, auth(account));
      expect(message).toMatchObject({
        id,
        batchId: batch?.id,
        status: MessageStatus.ACCEPTED,
        nonDeliveryReason: NonDeliveryReason.UNSPECIFIED,
        ttlSeconds: 21600,
      });
      expect(message?.segments).toHaveLength(2);
      expect(message?.notifications[0]).toMatchObject({
        status: MessageStatus.ACCEPTED,
        state: NotificationState.PENDING,
      });
    });

    it("SendBatch: whole-request errors, and FAILED_PRECONDITION when credit is short (nothing stored)", async () => {
      expect(await failure(messaging.sendBatch({ messages: [] }, auth(account)))).toEqual({
        code: Code.InvalidArgument,
        reason: "FIELD_INVALID",
        fields: { messages: "messages cannot be empty" },
      });
      expect(
        await failure(
          messaging.sendBatch(
            {
              name: "n".repeat(21),
              sender: "Nobody",
              messages: [{ to: "+4915112345678", text: "x" }],
            },
            auth(account),
          ),
        ),
      ).toEqual({
        code: Code.InvalidArgument,
        reason: "FIELD_INVALID",
        fields: {
          name: "name must be at most 20 characters",
          sender:
            "from must be the shared sender SMSINFO, an approved sender name of the account or a number assigned to it",
        },
      });
      const tooMany = Array.from({ length: 10_001 }, () => ({ to: "+4915112345678", text: "x" }));
      expect(
        await failure(messaging.sendBatch({ messages: tooMany }, auth(account))),
      ).toMatchObject({
        code: Code.InvalidArgument,
        fields: { messages: "messages holds 10001 messages; at most 10000 are allowed" },
      });

      const before = await storedFor(service, account.apiKey);
      const costly = Array.from({ length: 100 }, () => ({ to: "+4915112345678", text: "x" }));
      expect(await failed(messaging.sendBatch({ messages: costly }, auth(account)))).toMatchObject({
        code: Code.FailedPrecondition,
        reason: "CREDIT_INSUFFICIENT",
        message: `not enough credit: this request costs 100; the account has ${before.credit}`,
        fields: {},
      });
      expect(await storedFor(service, account.apiKey)).toEqual(before);
    });

    it("GetBatch, ListBatchMessages and GetMessage: unknown or another account's id is NOT_FOUND", async () => {
      const stranger = await service.createAccount();
      const { batch } = await messaging.sendBatch(
        { messages: [{ to: "+4915112345678", text: "x" }] },
        auth(account),
      );
      const mine = await messaging.listBatchMessages({ batchId: batch?.id ?? 0n }, auth(account));
      const messageId = mine.messages[0]?.id ?? 0n;
      for (const who of [stranger, account]) {
        const id = who === account ? 999_999_999n : (batch?.id ?? 0n);
        expect(await failure(messaging.getBatch({ id }, auth(who)))).toEqual({
          code: Code.NotFound,
          reason: "BATCH_NOT_FOUND",
          fields: { id: `no batch with id ${id}` },
        });
        expect(await failure(messaging.listBatchMessages({ batchId: id }, auth(who)))).toEqual({
          code: Code.NotFound,
          reason: "BATCH_NOT_FOUND",
          fields: { batch_id: `no batch with id ${id}` },
        });
      }
      expect(await failed(messaging.getMessage({ id: messageId }, auth(stranger)))).toMatchObject({
        code: Code.NotFound,
        reason: "MESSAGE_NOT_FOUND",
        fields: { id: `no message with id ${messageId}` },
        resource: { type: "sms.v1.Message", name: `${messageId}` },
      });
    });
  });

  describe("SenderNameService", () => {
    it("CreateSenderName, ListSenderNames, DeleteSenderName", async () => {
      const who = await service.createAccount();
      const created = await senderNames.createSenderName(
        {
          name: "RpcName",
          purpose: SenderNamePurpose.OTP,
          ownerType: SenderNameOwnerType.WEBSITE,
          owner: "example.com",
          exampleMsg: "Your code is 1234",
        },
        auth(who),
      );
      expect(created.senderName).toMatchObject({
        name: "RpcName",
        pending: true,
        reliable: false,
        isDefault: false,
        purpose: SenderNamePurpose.OTP,
        ownerType: SenderNameOwnerType.WEBSITE,
      });
      await service.admin.approveSenderName({ apiKey: who.apiKey, name: "RpcName" }, adminHeaders);
      await service.admin.setDefaultSender(
        { apiKey: who.apiKey, senderName: "RpcName" },
        adminHeaders,
      );
      const listed = await senderNames.listSenderNames({}, auth(who));
      expect(listed.senderNames.map((s) => [s.name, s.pending, s.isDefault])).toEqual([
        ["RpcName", false, true],
      ]);
      const { message } = await messaging.sendMessage(
        { to: "+4915112345678", text: "x" },
        auth(who),
      );
      expect(message?.sender).toBe("RpcName");

      const deleted = await senderNames.deleteSenderName({ name: "RpcName" }, auth(who));
      expect(deleted.senderName).toMatchObject({ name: "RpcName", isDefault: true });
      expect((await senderNames.listSenderNames({}, auth(who))).senderNames).toEqual([]);
      expect(await failure(senderNames.deleteSenderName({ name: "RpcName" }, auth(who)))).toEqual({
        code: Code.NotFound,
        reason: "SENDER_NAME_NOT_FOUND",
        fields: { name: "no sender name RpcName on this account" },
      });
    });

    it("CreateSenderName checks every field; unspecified enums are INVALID_ARGUMENT", async () => {
      expect(
        await failure(senderNames.createSenderName({ name: "Twelve_chars" }, auth(account))),
      ).toEqual({
        code: Code.InvalidArgument,
        reason: "FIELD_INVALID",
        fields: {
          name: "name must be at most 11 characters, letters and digits only",
          purpose: "purpose must be one of OTP, NOTIFICATION, MARKETING",
          owner_type: "ownerType must be one of COMPANY, NAME, WEBSITE",
          owner: "owner cannot be empty",
          example_msg: "exampleMsg cannot be empty",
        },
      });
      expect(
        await failure(senderNames.listSenderNames({}, auth({ apiKey: "nobody", apiSecret: "x" }))),
      ).toMatchObject({ code: Code.Unauthenticated });
    });
  });
});

describe("text that UTF-8 cannot carry", () => {
  it("a lone surrogate escaped in Connect JSON is INVALID_ARGUMENT when the request is decoded", async () => {
    const account = await service.createAccount();
    const before = await storedFor(service, account.apiKey);
    // Raw Connect JSON, as any HTTP client would send it.
    const response = await fetch(`${service.baseUrl}/sms.v1.MessagingService/SendMessage`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth(account).headers },
      body: '{"to":"+4915112345678","text":"a\\ud800b"}',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      code: "invalid_argument",
      message: expect.stringMatching(/text.*invalid UTF8/),
    });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
  });
});

describe("a Connect JSON call's answer, as any HTTP client reads it", () => {
  const send = (account: Account, text: string, headers: Record<string, string> = {}) =>
    fetch(`${service.baseUrl}/sms.v1.MessagingService/SendMessage`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth(account).headers, ...headers },
      body: JSON.stringify({ to: "+4915112345678", text }),
    });

  it("declares its length in bytes, not in characters, for a text beyond ASCII", async () => {
    const account = await service.createAccount();
    const text = "Grüße, 👋 bis morgen";
    const response = await send(account, text, { "accept-encoding": "identity" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json");
    const body = Buffer.from(await response.arrayBuffer());
    expect(Number(response.headers.get("content-length"))).toBe(body.byteLength);
    expect(body.byteLength).toBeGreaterThan(body.toString("utf8").length);
    expect(JSON.parse(body.toString("utf8")).message.text).toBe(text);
  });

  it("is compressed when the client accepts it and it is over 1 KiB", async () => {
    const account = await service.createAccount();
    const text = "é".repeat(600);
    const response = await send(account, text, { "accept-encoding": "gzip" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-encoding")).toBe("gzip");
    expect(((await response.json()) as { message: { text: string } }).message.text).toBe(text);
  });
});
