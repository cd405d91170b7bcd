/**
 * The same operations through the generated types over Connect and gRPC (HTTP/2 on GRPC_PORT):
 * MessagingService and SenderNameService, with their error codes and the FieldErrors detail keyed
 * by the REST parameter name. One implementation: the rules are those the REST tests check.
 */
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import {
  FieldErrorsSchema,
  MessageStatus,
  NonDeliveryReason,
  NotificationState,
  SenderNameOwnerType,
  SenderNamePurpose,
} from "../../gen/sms/v1/types_pb.ts";
import { PHONE_NUMBER_ERROR } from "../../src/domain/phone-numbers.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { adminHeaders, type RunningService, startService } from "../support/service.ts";
import { type Account, creditOf, storedFor } from "./helpers.ts";

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

/** The error a call failed with, and its field errors as {field: message}. */
async function failure(call: Promise<unknown>) {
  const error = await call.then(
    () => {
      throw new Error("the call succeeded");
    },
    (e: unknown) => ConnectError.from(e),
  );
  const fields = Object.fromEntries(
    error.findDetails(FieldErrorsSchema).flatMap((d) => d.errors.map((e) => [e.field, e.message])),
  );
  return { code: error.code, fields };
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
        { to: "+4915112345678", text, ttl: 60 },
        auth(account),
      );
      expect(message).toMatchObject({
        to: "+4915112345678",
        from: "SMSINFO",
        text,
        status: MessageStatus.ACCEPTED,
        creditRemaining: 48,
      });
      expect(message?.segments.map((s) => s.text)).toEqual(["a".repeat(66), `😀${"b".repeat(10)}`]);
      const ids = [message?.id, ...(message?.segments.map((s) => s.id) ?? [])];
      expect(new Set(ids).size).toBe(3);
      expect((await service.store.messages.findOne({ _id: Number(message?.id) }))?.ttl).toBe(60);
    });

    it("SendMessage refuses invalid parameters with INVALID_ARGUMENT and FieldErrors; stores nothing", async () => {
      const before = await storedFor(service, account.apiKey);
      expect(
        await failure(
          messaging.sendMessage({ to: "12", text: "", ttl: 0, from: "Nobody" }, auth(account)),
        ),
      ).toEqual({
        code: Code.InvalidArgument,
        fields: {
          to: PHONE_NUMBER_ERROR,
          text: "text cannot be empty",
          ttl: "ttl must be an integer from 1 to 21600 seconds",
          from: "from must be the shared sender SMSINFO or an approved sender name of the account",
        },
      });
      expect(
        await failure(
          messaging.sendMessage({ to: "+4915112345678", text: "x", ttl: 21601 }, auth(account)),
        ),
      ).toMatchObject({ code: Code.InvalidArgument, fields: { ttl: expect.any(String) } });
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

    it("credentials: missing or wrong is UNAUTHENTICATED, missing with FieldErrors on apiKey/apiSecret", async () => {
      expect(await failure(messaging.sendMessage({ to: "+4915112345678", text: "x" }))).toEqual({
        code: Code.Unauthenticated,
        fields: { apiKey: "apiKey cannot be empty", apiSecret: "apiSecret cannot be empty" },
      });
      expect(
        await failure(
          messaging.sendMessage(
            { to: "+4915112345678", text: "x" },
            auth({ apiKey: account.apiKey, apiSecret: "wrong" }),
          ),
        ),
      ).toEqual({
        code: Code.Unauthenticated,
        fields: { request: "apiKey and apiSecret do not match an account" },
      });
    });

    it("SendBatch: partial acceptance, credit left; GetBatch and GetMessage read it back", async () => {
      const before = await creditOf(service, account.apiKey);
      const { batch } = await messaging.sendBatch(
        {
          name: "rpc",
          messages: [
            { to: "+4915100000001", text: "one" },
            { to: "1", text: "bad" },
            { to: "+4915100000002", text: "x".repeat(161), from: "SMSINFO" },
          ],
        },
        auth(account),
      );
      expect(batch).toMatchObject({
        name: "rpc",
        totalCount: 3,
        acceptedCount: 2,
        rejectedCount: 1,
        creditRemaining: before - 3,
      });
      expect(batch?.errors.map((e) => ({ index: e.index, text: e.text }))).toEqual([
        { index: 1, text: PHONE_NUMBER_ERROR },
      ]);

      const info = await messaging.getBatch({ id: batch?.id ?? 0n }, auth(account));
      expect(info.batch).toMatchObject({
        id: batch?.id,
        name: "rpc",
        totalCount: 3,
        acceptedCount: 2,
        rejectedCount: 1,
        sentCount: 0,
        isActive: true,
      });
      expect(info.batch?.messages.map((m) => [m.to, m.from, m.status])).toEqual([
        ["+4915100000001", "SMSINFO", MessageStatus.ACCEPTED],
        ["+4915100000002", "SMSINFO", MessageStatus.ACCEPTED],
      ]);

      const id = info.batch?.messages[1]?.id ?? 0n;
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
        fields: { messages: "messages cannot be empty" },
      });
      expect(
        await failure(
          messaging.sendBatch(
            {
              name: "n".repeat(21),
              from: "Nobody",
              messages: [{ to: "+4915112345678", text: "x" }],
            },
            auth(account),
          ),
        ),
      ).toEqual({
        code: Code.InvalidArgument,
        fields: {
          name: "name must be at most 20 characters",
          from: "from must be the shared sender SMSINFO or an approved sender name of the account",
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
      expect(await failure(messaging.sendBatch({ messages: costly }, auth(account)))).toEqual({
        code: Code.FailedPrecondition,
        fields: {
          request: `not enough credit: this request costs 100; the account has ${before.credit}`,
        },
      });
      expect(await storedFor(service, account.apiKey)).toEqual(before);
    });

    it("GetBatch and GetMessage: unknown or another account's id is NOT_FOUND on id", async () => {
      const stranger = await service.createAccount();
      const { batch } = await messaging.sendBatch(
        { messages: [{ to: "+4915112345678", text: "x" }] },
        auth(account),
      );
      const mine = await messaging.getBatch({ id: batch?.id ?? 0n }, auth(account));
      const messageId = mine.batch?.messages[0]?.id ?? 0n;
      for (const who of [stranger, account]) {
        const id = who === account ? 999_999_999n : (batch?.id ?? 0n);
        expect(await failure(messaging.getBatch({ id }, auth(who)))).toEqual({
          code: Code.NotFound,
          fields: { id: `no batch with id ${id}` },
        });
      }
      expect(await failure(messaging.getMessage({ id: messageId }, auth(stranger)))).toEqual({
        code: Code.NotFound,
        fields: { id: `no message with id ${messageId}` },
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
      expect(message?.from).toBe("RpcName");

      const deleted = await senderNames.deleteSenderName({ name: "RpcName" }, auth(who));
      expect(deleted.senderName).toMatchObject({ name: "RpcName", isDefault: true });
      expect((await senderNames.listSenderNames({}, auth(who))).senderNames).toEqual([]);
      expect(await failure(senderNames.deleteSenderName({ name: "RpcName" }, auth(who)))).toEqual({
        code: Code.NotFound,
        fields: { name: "no sender name RpcName on this account" },
      });
    });

    it("CreateSenderName checks every field; unspecified enums are INVALID_ARGUMENT", async () => {
      expect(
        await failure(senderNames.createSenderName({ name: "Twelve_chars" }, auth(account))),
      ).toEqual({
        code: Code.InvalidArgument,
        fields: {
          name: "name must be at most 11 characters, letters and digits only",
          purpose: "purpose must be one of OTP, NOTIFICATION, MARKETING",
          ownerType: "ownerType must be one of COMPANY, NAME, WEBSITE",
          owner: "owner cannot be empty",
          exampleMsg: "exampleMsg cannot be empty",
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
