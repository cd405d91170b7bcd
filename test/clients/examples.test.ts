/**
 * The Go and Python examples (examples/go, examples/python) run against the service as a new
 * user would run them: code generated from proto/, the account's credentials in the
 * environment. Go speaks Connect on PORT, Python gRPC on GRPC_PORT. Each sends a message and a
 * batch, reads them, lists messages and handles a field error through the google.rpc details,
 * lists the inbound messages of the account's number, and receives an inbound webhook on a
 * receiver of its own, verifying its signature (Standard Webhooks over the body). The webhooks are
 * the service's own: while the example waits, an inbound message comes in through
 * AdminService.SimulateInbound (simulator carrier) and the service's notifier posts it, signed,
 * to the example's receiver, which must take it (the message's webhook ends delivered). Before
 * that, a real webhook of the service captured earlier is posted again with its body changed: the
 * example must refuse it (401).
 *
 * The service runs without its delivery worker (so the example's messages stay ACCEPTED, as its
 * story prints); its notifier, the one startBackgroundWork runs beside the worker, runs here on
 * the service's database with the service's webhook settings.
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
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PHONE_NUMBER_ERROR } from "../../src/domain/phone-numbers.ts";
import { ERROR_DOMAIN } from "../../src/errors/api-errors.ts";
import { Notifier } from "../../src/notifier/notifier.ts";
import { inboundMessagesCollection } from "../../src/store/inbound-messages.ts";
import { eventually } from "../support/fixtures.ts";
import { adminHeaders, type RunningService, startService } from "../support/service.ts";
import {
  type ReceivedRequest,
  startWebhookReceiver,
  type WebhookReceiver,
} from "../support/webhook-receiver.ts";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");
const python =
  process.env.SMS_EXAMPLES_PYTHON ??
  join(homedir(), ".cache/sms-service/python-example/bin/python");

let service: RunningService;
let notifier: Notifier;
let receiver: WebhookReceiver;
const generated = mkdtempSync(join(tmpdir(), "sms-python-gen-"));

beforeAll(async () => {
  service = await startService();
  const { config } = service;
  notifier = new Notifier({
    store: service.store,
    logger: pino({ level: "silent" }),
    instanceId: "examples-notifier",
    retrySchedule: config.webhookRetryScheduleMs,
    timeoutMs: config.webhookTimeoutMs,
    allowPrivate: config.webhookAllowPrivate,
  });
  await notifier.start();
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await notifier?.stop();
  await service?.close();
  await receiver?.close();
  rmSync(generated, { recursive: true, force: true });
});

type Account = Awaited<ReturnType<RunningService["createAccount"]>>;

const NUMBER = "+4915799991234";
const ASKS = { from: "+4917011112222", text: "Where is my parcel?" };
/** What comes in while the example waits for a webhook. */
const LATER = { from: "+4917055556666", text: "Is it there yet?" };

/**
 * A fresh account with NUMBER's inbound messages: a question, a STOP, a thank-you; and the real
 * webhook of the thank-you, which went to the test's receiver (the account's inbound URL is then
 * cleared again).
 */
async function accountWithInbound(): Promise<{ account: Account; captured: ReceivedRequest }> {
  const account = await service.createAccount();
  await service.admin.releaseNumber({ number: NUMBER }, adminHeaders).catch(() => undefined);
  await service.admin.assignNumber({ apiKey: account.apiKey, number: NUMBER }, adminHeaders);
  const inboundUrl = (url: string) =>
    service.admin.setInboundUrl({ apiKey: account.apiKey, inboundUrl: url }, adminHeaders);
  for (const [from, text] of [
    [ASKS.from, ASKS.text],
    ["+4917033334444", "STOP"],
  ]) {
    await service.admin.simulateInbound({ sender: from, to: NUMBER, text }, adminHeaders);
  }
  await inboundUrl(`${receiver.baseUrl}/inbound`);
  const { inboundMessage } = await service.admin.simulateInbound(
    { sender: ASKS.from, to: NUMBER, text: "Thanks" },
    adminHeaders,
  );
  const webhookId = `inbound_${inboundMessage?.id}`;
  const isIt = (r: ReceivedRequest) => r.headers["webhook-id"] === webhookId && r.answered === 200;
  await receiver.waitFor((requests) => requests.some(isIt));
  await inboundUrl("");
  const captured = receiver.requests.find(isIt);
  if (!captured) throw new Error("the service's webhook was not received");
  return { account, captured };
}

/**
 * Runs an example to its end and answers its stdout. When it says where it waits for an inbound
 * webhook, checks that the example set the account's inbound URL to it, posts the captured real
 * webhook there with its body changed (it must answer 401), and lets an inbound message come in,
 * whose webhook the service sends there (the example must take it).
 */
async function runExample(
  command: string,
  args: string[],
  options: { cwd?: string; env: NodeJS.ProcessEnv; timeoutMs: number },
  { account, captured }: { account: Account; captured: ReceivedRequest },
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
      posted = sendInboundWebhooks(url, account, captured);
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

async function sendInboundWebhooks(
  url: string,
  account: Account,
  captured: ReceivedRequest,
): Promise<void> {
  const stored = await service.store.accounts.findOne({ _id: account.apiKey });
  expect(stored?.inboundUrl).toBe(url);
  // The service's own signature over another body.
  const signature = ["webhook-id", "webhook-timestamp", "webhook-signature"].map((name) => [
    name,
    String(captured.headers[name]),
  ]);
  const tampered = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...Object.fromEntries(signature) },
    body: captured.body.replace("Thanks", "Refund me"),
  });
  expect(tampered.status).toBe(401);
  // A real one: the service stores the message, its notifier posts it to the example.
  const { inboundMessage } = await service.admin.simulateInbound(
    { sender: LATER.from, to: NUMBER, text: LATER.text },
    adminHeaders,
  );
  const id = Number(inboundMessage?.id);
  await eventually(async () => {
    const doc = await inboundMessagesCollection(service.store.db).findOne({ _id: id });
    return doc?.webhook?.state === "delivered";
  }, 30_000);
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
  // The changed body refused, the service's webhook taken.
  expect(output).toContain("inbound webhook refused: signature invalid");
  const later = await inboundMessagesCollection(service.store.db).findOne({
    accountId: account.apiKey,
    text: LATER.text,
  });
  expect(output).toContain(
    `inbound webhook inbound_${later?._id} verified: ${LATER.from} to ${NUMBER}: ${LATER.text}`,
  );
  // The account's inbound URL is back as it was.
  const stored = await service.store.accounts.findOne({ _id: account.apiKey });
  expect(stored?.inboundUrl).toBeUndefined();
}

describe("generated clients in other languages", () => {
  it("Go (connect-go, Connect protocol on PORT)", { timeout: 240_000 }, async () => {
    const inbound = await accountWithInbound();
    const { account } = inbound;
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
      inbound,
    );
    await expectTheStory(stdout, account);
    // A key that may only read: refused a send for its scope, then deleted.
    const made = /^made read key (\w+)$/m.exec(stdout)?.[1];
    expect(made).toBeDefined();
    expect(stdout).toContain("read key refused: API_KEY_SCOPE");
    expect(stdout).toContain(`deleted key ${made}`);
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
    const inbound = await accountWithInbound();
    const { account } = inbound;
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
      inbound,
    );
    await expectTheStory(stdout, account);
  });
});
