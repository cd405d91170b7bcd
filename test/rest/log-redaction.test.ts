/**
 * No credential in any log line or error (issue 11, defect 12): the log of a real instance at
 * trace level, through every door that carries one (query strings of GET and DELETE, bodies of
 * POST, Basic and Bearer headers on Connect, a request the HTTP parser refuses), holds neither
 * the apiSecret, nor the Authorization value, nor the operator's token.
 */
import net from "node:net";
import { Writable } from "node:stream";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import { redactUrl } from "../../src/logging.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { ADMIN_TOKEN, postJson, type RunningService, startService } from "../support/service.ts";
import { type Account, senderNameRequest, withQuery } from "./helpers.ts";

const lines: string[] = [];
const logStream = new Writable({
  write(chunk: Buffer, _encoding, done) {
    lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    done();
  },
});

let service: RunningService;
let account: Account;

beforeAll(async () => {
  service = await startService({ LOG_LEVEL: "trace" }, undefined, { logStream });
  account = await service.createAccount();
});
afterAll(() => service?.close());

/** Every string the log must never hold for `account`. */
const secretsOf = (who: Account) => [
  who.apiSecret,
  encodeURIComponent(who.apiSecret),
  basicAuthorization(who.apiKey, who.apiSecret),
  basicAuthorization(who.apiKey, who.apiSecret).replace(/^Basic /, ""),
];

function expectNoneIn(text: string, secrets: string[]): void {
  for (const secret of secrets) expect(text).not.toContain(secret);
}

/** Sends bytes over a plain socket and returns whatever comes back before the close. */
function rawExchange(bytes: string): Promise<string> {
  const { port } = new URL(service.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), "127.0.0.1", () => socket.end(bytes));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("close", () => resolve(Buffer.concat(chunks).toString("utf8")));
    socket.on("error", reject);
  });
}

describe("credentials never reach a log line or an error", () => {
  it("GET and DELETE with apiKey and apiSecret in the query log the path, not the values", async () => {
    const answers = await Promise.all([
      withQuery("GET", `${service.baseUrl}/sender_names`, { ...account }),
      withQuery("DELETE", `${service.baseUrl}/sender_names/NOSUCH`, { ...account }),
      withQuery("GET", `${service.baseUrl}/sms-batch/999`, { ...account }),
      withQuery("GET", `${service.baseUrl}/sms-batch/not-a-number`, { ...account }),
      withQuery("GET", `${service.baseUrl}/no/such/path`, { ...account }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 404, 404, 400, 404]);
    // A percent-encoded parameter name is still the credential the query parser reads.
    const encoded = await fetch(
      `${service.baseUrl}/sender_names?apiKey=${account.apiKey}&api%53ecret=${encodeURIComponent(account.apiSecret)}`,
    );
    expect(encoded.status).toBe(200);
    for (const answer of answers) expectNoneIn(JSON.stringify(answer.body), secretsOf(account));

    const log = lines.join("\n");
    expectNoneIn(log, secretsOf(account));
    expect(log).toContain("/sender_names?apiKey=[REDACTED]&apiSecret=[REDACTED]");
    expect(log).toContain("/sms-batch/999?apiKey=[REDACTED]");
  });

  it("a wrong secret is not logged either", async () => {
    const wrong = { apiKey: account.apiKey, apiSecret: "wrong-secret-that-must-not-be-logged" };
    const answer = await withQuery("GET", `${service.baseUrl}/sender_names`, wrong);
    expect(answer.status).toBe(401);
    expectNoneIn(JSON.stringify(answer.body) + lines.join("\n"), secretsOf(wrong));
  });

  it("POST bodies, Basic headers on Connect and the operator's bearer token are not logged", async () => {
    const send = await postJson(`${service.baseUrl}/sms`, {
      to: "+4915112345678",
      text: "hello",
      ...account,
    });
    expect(send.status).toBe(200);
    const created = await postJson(`${service.baseUrl}/sender_names`, {
      ...senderNameRequest("Logged"),
      ...account,
    });
    expect(created.status).toBe(200);
    const senderNames = createClient(
      SenderNameService,
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    );
    await senderNames.listSenderNames(
      {},
      { headers: { authorization: basicAuthorization(account.apiKey, account.apiSecret) } },
    );
    await service.createAccount();

    const log = lines.join("\n");
    expectNoneIn(log, [...secretsOf(account), ADMIN_TOKEN]);
    expect(log).toContain("/sms.v1.SenderNameService/ListSenderNames");
  });

  it("a request the HTTP parser refuses is logged without its raw bytes", async () => {
    const before = lines.length;
    const answer = await rawExchange(
      `GET /sender_names?apiKey=${account.apiKey}&apiSecret=${account.apiSecret} HTTP/1.1\r\n` +
        `Host: x\r\nAuthorization: ${basicAuthorization(account.apiKey, account.apiSecret)}\r\n` +
        "Bad Header Without Colon\r\n\r\n",
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const logged = lines.slice(before).join("\n");
    // The parse error is logged (its wording is the client-error handler's)...
    expect(logged).toContain("HPE_INVALID_HEADER_TOKEN");
    // pino would write the raw request as a list of byte values, Authorization header included.
    expect(logged).not.toContain("rawPacket");
    expectNoneIn(answer + logged, secretsOf(account));
  });
});

describe("redactUrl", () => {
  it("keeps the path and the other parameters, and blanks every credential's value", () => {
    expect(redactUrl("/sender_names")).toBe("/sender_names");
    expect(redactUrl("/x?apiKey=k&apiSecret=s&name=n")).toBe(
      "/x?apiKey=[REDACTED]&apiSecret=[REDACTED]&name=n",
    );
    expect(redactUrl("/x?api%53ecret=s&token&flag")).toBe(
      "/x?api%53ecret=[REDACTED]&token=[REDACTED]&flag",
    );
    expect(redactUrl("/x?api%ZZSecret=s")).toBe("/x?api%ZZSecret=[REDACTED]");
  });
});
