/**
 * Every input is bounded: form bodies are parsed in linear time with a bounded number of
 * parameters, URLs are at most 2048 characters, sender-name texts are bounded and an account
 * holds a bounded number of sender names; REST answers the spec's 400 shape, RPC INVALID_ARGUMENT.
 */
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import {
  FORM_MAX_PARAMETERS,
  SENDER_EXAMPLE_MAX_CHARS,
  SENDER_NAMES_PER_ACCOUNT_MAX,
  SENDER_OWNER_MAX_CHARS,
  URL_MAX_CHARS,
} from "../../src/domain/limits.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { failure } from "../support/error-details.ts";
import { adminHeaders, postJson, type RunningService, startService } from "../support/service.ts";
import { type Account, rawPost, senderNameRequest, storedFor } from "./helpers.ts";

let service: RunningService;
let account: Account;

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 100 });
});
afterAll(() => service?.close());

const FORM_TYPE = "application/x-www-form-urlencoded";
const longUrl = (chars: number) => {
  const base = "https://example.com/hook?pad=";
  return base + "a".repeat(chars - base.length);
};

/** The code and BadRequest field violations (proto paths) of a failed RPC. */
async function rpcFailure(call: Promise<unknown>) {
  const { code, fields } = await failure(call);
  return { code, fields };
}

const rpc = () => {
  const transport = createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" });
  const headers = { authorization: basicAuthorization(account.apiKey, account.apiSecret) };
  return {
    messaging: createClient(MessagingService, transport),
    senderNames: createClient(SenderNameService, transport),
    options: { headers },
  };
};

describe("form bodies", () => {
  it("40000 repeated keys are refused at once, and /health answers meanwhile", async () => {
    const body = Array.from({ length: 40_000 }, () => "x").join("&");
    const started = Date.now();
    const [answer, health] = await Promise.all([
      rawPost(`${service.baseUrl}/sms`, FORM_TYPE, body),
      fetch(`${service.baseUrl}/health`).then(async (r) => ({
        status: r.status,
        body: await r.json(),
      })),
    ]);
    expect(answer).toEqual({
      status: 400,
      body: {
        errors: {
          request: [
            `the form has more than ${FORM_MAX_PARAMETERS} parameters; send at most ${FORM_MAX_PARAMETERS}`,
          ],
        },
      },
    });
    expect(health).toMatchObject({ status: 200, body: { status: "ok" } });
    // Generous: the quadratic parser took about 15 s for this body.
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("a repeated key within the bound is still refused on that parameter", async () => {
    const { status, body } = await rawPost(
      `${service.baseUrl}/sms`,
      FORM_TYPE,
      `to=1&to=2&to=3&text=x&apiKey=${account.apiKey}&apiSecret=x`,
    );
    expect(status).toBe(400);
    expect(body.errors.to).toEqual(["to must be a string"]);
  });
});

describe("URLs are at most 2048 characters", () => {
  it("POST /sms: statusCallback of 2049 characters is 400 errors.statusCallback; 2048 is fine", async () => {
    const before = await storedFor(service, account.apiKey);
    const send = (statusCallback: string) =>
      postJson(`${service.baseUrl}/sms`, {
        to: "+4915112345678",
        text: "x",
        statusCallback,
        ...account,
      });
    expect(await send(longUrl(URL_MAX_CHARS + 1))).toEqual({
      status: 400,
      body: {
        errors: { statusCallback: [`statusCallback must be at most ${URL_MAX_CHARS} characters`] },
      },
    });
    expect(await storedFor(service, account.apiKey)).toEqual(before);
    expect((await send(longUrl(URL_MAX_CHARS))).status).toBe(200);
  });

  it("POST /sms-batch: a batch statusCallback over the limit refuses the batch (a string)", async () => {
    const { status, body } = await postJson(`${service.baseUrl}/sms-batch`, {
      messages: [{ to: "+4915112345678", text: "x" }],
      statusCallback: longUrl(URL_MAX_CHARS + 1),
      ...account,
    });
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: { statusCallback: `statusCallback must be at most ${URL_MAX_CHARS} characters` },
    });
  });

  it("RPC SendMessage and SendBatch: INVALID_ARGUMENT on statusCallback, even 8 MiB long", async () => {
    const { messaging, options } = rpc();
    const expected = {
      code: Code.InvalidArgument,
      fields: { status_callback: `statusCallback must be at most ${URL_MAX_CHARS} characters` },
    };
    expect(
      await rpcFailure(
        messaging.sendMessage(
          { to: "+4915112345678", text: "x", statusCallback: longUrl(URL_MAX_CHARS + 1) },
          options,
        ),
      ),
    ).toEqual(expected);
    // Over the read limit of SendMessage: refused before it is parsed.
    const huge = await rpcFailure(
      messaging.sendMessage(
        { to: "+4915112345678", text: "x", statusCallback: longUrl(8 << 20) },
        options,
      ),
    );
    expect(huge.code).toBe(Code.ResourceExhausted);
    expect(
      await rpcFailure(
        messaging.sendBatch(
          {
            messages: [{ to: "+4915112345678", text: "x" }],
            statusCallback: longUrl(URL_MAX_CHARS + 1),
          },
          options,
        ),
      ),
    ).toEqual(expected);
  });

  it("AdminService: an account's status URL over the limit is INVALID_ARGUMENT on statusUrl", async () => {
    const failure = await rpcFailure(
      service.admin.setStatusUrl(
        { apiKey: account.apiKey, statusUrl: longUrl(URL_MAX_CHARS + 1) },
        adminHeaders,
      ),
    );
    expect(failure).toEqual({
      code: Code.InvalidArgument,
      fields: { status_url: `statusUrl must be at most ${URL_MAX_CHARS} characters` },
    });
  });
});

describe("sender names", () => {
  it("owner and exampleMsg over their limits: 400 on REST, INVALID_ARGUMENT on RPC", async () => {
    const request = {
      ...senderNameRequest("Bounded"),
      owner: "o".repeat(SENDER_OWNER_MAX_CHARS + 1),
      exampleMsg: "e".repeat(SENDER_EXAMPLE_MAX_CHARS + 1),
    };
    const fields = {
      owner: `owner must be at most ${SENDER_OWNER_MAX_CHARS} characters`,
      exampleMsg: `exampleMsg must be at most ${SENDER_EXAMPLE_MAX_CHARS} characters`,
    };
    expect(await postJson(`${service.baseUrl}/sender_names`, { ...request, ...account })).toEqual({
      status: 400,
      body: { errors: { owner: [fields.owner], exampleMsg: [fields.exampleMsg] } },
    });
    const { senderNames, options } = rpc();
    const refused = await rpcFailure(
      senderNames.createSenderName({ ...request, purpose: 2, ownerType: 1 } as never, options),
    );
    expect(refused).toEqual({
      code: Code.InvalidArgument,
      fields: { owner: fields.owner, example_msg: fields.exampleMsg },
    });
    expect(await service.store.senderNames.countDocuments({ name: "Bounded" })).toBe(0);
  });

  it(`an account holds at most ${SENDER_NAMES_PER_ACCOUNT_MAX} sender names`, async () => {
    const owner = await service.createAccount();
    await service.store.senderNames.insertMany(
      Array.from({ length: SENDER_NAMES_PER_ACCOUNT_MAX }, (_, i) => ({
        accountId: owner.apiKey,
        name: `N${i}`,
        pending: true,
        reliable: false,
        purpose: "NOTIFICATION" as const,
        ownerType: "COMPANY" as const,
        owner: "Example Ltd",
        exampleMsg: "hello",
        createdAt: new Date(),
      })),
    );
    const { status, body } = await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("OneMore"),
      ...owner,
    });
    expect(status).toBe(400);
    expect(body).toEqual({
      errors: {
        request: [
          `the account holds ${SENDER_NAMES_PER_ACCOUNT_MAX} sender names, the most it may; delete one first`,
        ],
      },
    });
    // Deleting one makes room again.
    const deleted = await fetch(
      `${service.baseUrl}/sender_names/N0?${new URLSearchParams(owner as unknown as Record<string, string>)}`,
      { method: "DELETE" },
    );
    expect(deleted.status).toBe(200);
    const again = await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("OneMore"),
      apiKey: owner.apiKey,
      apiSecret: owner.apiSecret,
    });
    expect(again.status).toBe(200);
  });
});

describe("the limits are in the OpenAPI document", () => {
  it("maxLength on statusCallback, owner and exampleMsg", async () => {
    const doc = await (await fetch(`${service.baseUrl}/openapi.json`)).json();
    const body = (path: string) =>
      doc.paths[path].post.requestBody.content["application/json"].schema;
    expect(body("/sms").properties.statusCallback.maxLength).toBe(URL_MAX_CHARS);
    expect(body("/sms-batch").properties.statusCallback.maxLength).toBe(URL_MAX_CHARS);
    expect(body("/sender_names").properties.owner.maxLength).toBe(SENDER_OWNER_MAX_CHARS);
    expect(body("/sender_names").properties.exampleMsg.maxLength).toBe(SENDER_EXAMPLE_MAX_CHARS);
  });
});
