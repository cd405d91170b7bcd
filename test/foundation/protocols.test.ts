import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { MessageStatus } from "../../gen/sms/v1/types_pb.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { postForm, postJson, type RunningService, startService } from "../support/service.ts";

let service: RunningService;
let account: { apiKey: string; apiSecret: string };

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 100 });
});
afterAll(() => service?.close());

describe("POST /sms sends one message", () => {
  it("accepts a form body and answers with the spec's Message body", async () => {
    const { status, body } = await postForm(`${service.baseUrl}/sms`, {
      to: "+4915112345678",
      text: "Hello",
      ...account,
    });
    expect(status).toBe(200);
    expect(body).toEqual({
      id: expect.any(Number),
      to: "+4915112345678",
      from: "SMSINFO",
      text: "Hello",
      status: "ACCEPTED",
      creditRemaining: expect.any(Number),
    });
  });

  it("accepts a JSON body, stores the message with an integer id and debits one credit per part", async () => {
    const before = await service.store.accounts.findOne({ _id: account.apiKey });
    const { status, body } = await postJson(`${service.baseUrl}/sms`, {
      to: "4915112345678",
      text: "x".repeat(200),
      ...account,
    });
    expect(status).toBe(200);
    expect(Number.isInteger(body.id)).toBe(true);
    expect(body.segments).toHaveLength(2);
    expect(body.creditRemaining).toBe((before?.creditMicros ?? 0) / 1_000_000 - 2);
    const stored = await service.store.messages.findOne({ _id: body.id });
    expect(stored).toMatchObject({ status: "ACCEPTED", to: "4915112345678", parts: 2 });
  });
});

describe("SendMessage over every protocol", () => {
  const headers = () => ({ authorization: basicAuthorization(account.apiKey, account.apiSecret) });

  it.each([
    [
      "Connect over HTTP/1.1 on PORT",
      () => createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    ],
    [
      "gRPC-Web over HTTP/1.1 on PORT",
      () => createGrpcWebTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    ],
    ["gRPC over HTTP/2 on GRPC_PORT", () => createGrpcTransport({ baseUrl: service.grpcUrl })],
    [
      "Connect over HTTP/2 on GRPC_PORT",
      () => createConnectTransport({ baseUrl: service.grpcUrl, httpVersion: "2" }),
    ],
  ])("%s", async (_name, transport) => {
    const client = createClient(MessagingService, transport());
    const { message } = await client.sendMessage(
      { to: "+4915112345678", text: "Hello over RPC" },
      { headers: headers() },
    );
    expect(message?.status).toBe(MessageStatus.ACCEPTED);
    expect(message?.id).toBeGreaterThan(0n);
    const stored = await service.store.messages.findOne({ _id: Number(message?.id) });
    expect(stored?.text).toBe("Hello over RPC");
  });

  it("rejects wrong credentials with UNAUTHENTICATED over gRPC", async () => {
    const client = createClient(
      MessagingService,
      createGrpcTransport({ baseUrl: service.grpcUrl }),
    );
    const error = await client
      .sendMessage(
        { to: "+4915112345678", text: "x" },
        { headers: { authorization: basicAuthorization(account.apiKey, "wrong") } },
      )
      .catch((e: unknown) => ConnectError.from(e));
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unauthenticated);
  });
});

describe("health", () => {
  it("reports ready", async () => {
    const response = await fetch(`${service.baseUrl}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });
});
