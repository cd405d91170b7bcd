/**
 * The Go and Python examples (examples/go, examples/python) run against the service as a new
 * user would run them: code generated from proto/, the account's credentials in the
 * environment. Go speaks Connect on PORT, Python gRPC on GRPC_PORT. Each sends a message and a
 * batch, reads them, lists messages and handles a field error through the google.rpc details.
 *
 * Needs `go` (modules from the Go module proxy, built once into Go's cache) and a Python with
 * examples/python/requirements.txt: SMS_EXAMPLES_PYTHON, else the virtual environment
 * scripts/test-tools.sh makes (npm test runs it first). Fails, saying so, without them.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PHONE_NUMBER_ERROR } from "../../src/domain/phone-numbers.ts";
import { ERROR_DOMAIN } from "../../src/services/errors.ts";
import { type RunningService, startService } from "../support/service.ts";

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

/** What both examples print for a fresh account (2 messages: one single, one of the batch). */
function expectTheStory(output: string): void {
  expect(output).toMatch(/^sent \d+ from SMSINFO, credit left 999000000 micro-units$/m);
  expect(output).toContain(`batch rejected messages[1].to: ${PHONE_NUMBER_ERROR}`);
  expect(output).toMatch(/^batch \d+ accepted 1$/m);
  expect(output).toMatch(/^read \d+ status (MESSAGE_STATUS_ACCEPTED|1)$/m);
  expect(output).toMatch(/^batch \d+ active true$/m);
  expect(output).toContain("listed 2 messages");
  expect(output).toContain(`error reason FIELD_INVALID domain ${ERROR_DOMAIN}`);
  expect(output).toContain(`field error to: ${PHONE_NUMBER_ERROR}`);
}

describe("generated clients in other languages", () => {
  it("Go (connect-go, Connect protocol on PORT)", { timeout: 240_000 }, async () => {
    const account = await service.createAccount();
    const { stdout } = await run("go", ["run", "./cmd/smsclient"], {
      cwd: join(root, "examples/go"),
      env: {
        ...process.env,
        SMS_URL: service.baseUrl,
        SMS_API_KEY: account.apiKey,
        SMS_API_SECRET: account.apiSecret,
      },
      timeout: 230_000,
    });
    expectTheStory(stdout);
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
    const account = await service.createAccount();
    const { stdout } = await run(python, [join(root, "examples/python/sms_client.py")], {
      env: {
        ...process.env,
        SMS_PYTHON_GEN: generated,
        SMS_GRPC_TARGET: new URL(service.grpcUrl).host,
        SMS_API_KEY: account.apiKey,
        SMS_API_SECRET: account.apiSecret,
      },
      timeout: 50_000,
    });
    expectTheStory(stdout);
  });
});
