/**
 * The Go and Python examples (examples/go, examples/python) run against the service as a new
 * user would run them: code generated from proto/, the account's credentials in the
 * environment. Go speaks Connect on PORT, Python gRPC on GRPC_PORT. Each sends a message and a
 * batch, reads them, lists messages and handles a field error through the google.rpc details,
 * lists the inbound messages of the account's number, and receives an inbound webhook on a
 * receiver of its own: it must refuse one whose signature does not hold and accept one signed as
 * the service signs (Standard Webhooks over the body, src/notifier/signature.ts).
 *
 * Needs `go` (modules from the Go module proxy, built once into Go's cache) and a Python with
 * examples/python/requirements.txt: SMS_EXAMPLES_PYTHON, else the virtual environment
 * scripts/test-tools.sh makes (npm test runs it first). Fails, saying so, without them.
 */
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PHONE_NUMBER_ERROR } from "../../src/domain/phone-numbers.ts";
import { webhookHeaders } from "../../src/notifier/signature.ts";
import { ERROR_DOMAIN } from "../../src/services/errors.ts";
import { adminHeaders, type RunningService, startService } from "../support/service.ts";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");
const python =
  process.env.SMS_EXAMPLES_PYTHON ??
  join(homedir(), ".cache/sms-service/python-example/bin/python");

let service: RunningService;
const generated = mkdtempSync(join(tmpdir(), "sms-python-gen-"));

beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service?.close();
  rmSync(generated, { recursive: true, force: true });
});

type Account = Awaited<ReturnType<RunningService["createAccount"]>>;

const NUMBER = "+4915799991234";
const ASKS = { from: "+4917011112222", text: "Where is my parcel?" };

/** A fresh account with NUMBER's inbound messages: a question, a STOP, a thank-you. */
async function accountWithInbound(): Promise<Account> {
  const account = await service.createAccount();
  await service.admin.releaseNumber({ number: NUMBER }, adminHeaders).catch(() => undefined);
  await service.admin.assignNumber({ apiKey: account.apiKey, number: NUMBER }, adminHeaders);
  for (const [from, text] of [
    [ASKS.from, ASKS.text],
    ["+4917033334444", "STOP"],
    [ASKS.from, "Thanks"],
  ]) {
    await service.admin.simulateInbound({ sender: from, to: NUMBER, text }, adminHeaders);
  }
  return account;
}

/**
 * Runs an example to its end and answers its stdout. When it says where it waits for an inbound
 * webhook, posts one with a broken signature there (it must answer 401), then one signed with the
 * account's secret (2xx); and checks that the example set the account's inbound URL to it.
 */
async function runExample(
  command: string,
  args: string[],
  options: { cwd?: string; env: NodeJS.ProcessEnv; timeoutMs: number },
  account: Account,
): Promise<string> {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let posted: Promise<void> | undefined;
  child.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  child.stdout.on("data", (chunk) => {
    stdout += chunk;
    const url = /^waiting for an inbound webhook at (\S+)$/m.exec(stdout)?.[1];
    if (url && !posted) {
      posted = postInboundWebhooks(url, account);
      // A failed check ends the example at once; its error is thrown below.
      posted.catch(() => child.kill("SIGKILL"));
    }
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
  const [code] = await once(child, "close");
  clearTimeout(timer);
  await posted;
  if (code !== 0) throw new Error(`${command} exited with ${code}: ${stderr}\n${stdout}`);
  return stdout;
}

async function postInboundWebhooks(url: string, account: Account): Promise<void> {
  const stored = await service.store.accounts.findOne({ _id: account.apiKey });
  expect(stored?.inboundUrl).toBe(url);
  const body = JSON.stringify({
    id: 1,
    from: ASKS.from,
    to: NUMBER,
    text: ASKS.text,
    parts: 1,
    receivedAt: new Date().toISOString(),
  });
  const post = (headers: Record<string, string>, payload: string) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: payload,
    });
  const tampered = await post(
    { ...webhookHeaders(account.webhookSecret, "msg_inbound_1", body) },
    body.replace("parcel", "money"),
  );
  expect(tampered.status).toBe(401);
  const signed = await post(
    { ...webhookHeaders(account.webhookSecret, "msg_inbound_1", body) },
    body,
  );
  expect(signed.status).toBeGreaterThanOrEqual(200);
  expect(signed.status).toBeLessThan(300);
}

/** What both examples print for accountWithInbound's account (1 message, then a batch of 1). */
async function expectTheStory(output: string, account: Account): Promise<void> {
  expect(output).toMatch(/^sent \d+ from SMSINFO, credit left 999000000 micro-units$/m);
  expect(output).toContain(`batch rejected messages[1].to: ${PHONE_NUMBER_ERROR}`);
  expect(output).toMatch(/^batch \d+ accepted 1$/m);
  expect(output).toMatch(/^read \d+ status (MESSAGE_STATUS_ACCEPTED|1)$/m);
  expect(output).toMatch(/^batch \d+ active true$/m);
  // Its two, and the reply to the STOP (free, from the account's number).
  expect(output).toContain("listed 3 messages");
  expect(output).toContain(`error reason FIELD_INVALID domain ${ERROR_DOMAIN}`);
  expect(output).toContain(`field error to: ${PHONE_NUMBER_ERROR}`);
  // The inbound messages, newest first, over two pages.
  const inbound = output.match(/^inbound \d+ from .*$/gm) ?? [];
  expect(inbound.map((line) => line.replace(/^inbound \d+ /, ""))).toEqual([
    `from ${ASKS.from} to ${NUMBER} (OPT_OUT_TYPE_UNSPECIFIED): Thanks`,
    `from +4917033334444 to ${NUMBER} (OPT_OUT_TYPE_STOP): STOP`,
    `from ${ASKS.from} to ${NUMBER} (OPT_OUT_TYPE_UNSPECIFIED): ${ASKS.text}`,
  ]);
  expect(output).toContain("listed 3 inbound messages");
  // The broken signature refused, the signed webhook taken.
  expect(output).toContain("inbound webhook refused: signature invalid");
  expect(output).toContain(
    `inbound webhook msg_inbound_1 verified: ${ASKS.from} to ${NUMBER}: ${ASKS.text}`,
  );
  // The account's inbound URL is back as it was.
  const stored = await service.store.accounts.findOne({ _id: account.apiKey });
  expect(stored?.inboundUrl).toBeUndefined();
}

describe("generated clients in other languages", () => {
  it("Go (connect-go, Connect protocol on PORT)", { timeout: 240_000 }, async () => {
    const account = await accountWithInbound();
    const stdout = await runExample(
      "go",
      ["run", "./cmd/smsclient"],
      {
        cwd: join(root, "examples/go"),
        env: {
          ...process.env,
          SMS_URL: service.baseUrl,
          SMS_API_KEY: account.apiKey,
          SMS_API_SECRET: account.apiSecret,
          SMS_WEBHOOK_SECRET: account.webhookSecret,
          SMS_WEBHOOK_WAIT_S: "30",
        },
        timeoutMs: 230_000,
      },
      account,
    );
    await expectTheStory(stdout, account);
  });

  it("Python (grpcio, gRPC on GRPC_PORT)", { timeout: 60_000 }, async () => {
    if (!existsSync(python)) {
      throw new Error(
        `no Python with the example's packages at ${python}: set SMS_EXAMPLES_PYTHON or run scripts/test-tools.sh (npm test does)`,
      );
    }
    await run(join(root, "examples/python/generate.sh"), [generated], {
      env: { ...process.env, PYTHON: python },
    });
    const account = await accountWithInbound();
    const stdout = await runExample(
      python,
      [join(root, "examples/python/sms_client.py")],
      {
        env: {
          ...process.env,
          SMS_PYTHON_GEN: generated,
          SMS_GRPC_TARGET: new URL(service.grpcUrl).host,
          SMS_API_KEY: account.apiKey,
          SMS_API_SECRET: account.apiSecret,
          SMS_WEBHOOK_SECRET: account.webhookSecret,
          SMS_WEBHOOK_WAIT_S: "30",
        },
        timeoutMs: 50_000,
      },
      account,
    );
    await expectTheStory(stdout, account);
  });
});
