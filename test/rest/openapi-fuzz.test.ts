/**
 * Property-based fuzzing of the REST API from its own OpenAPI document (schemathesis, from PyPI):
 * generated valid and invalid requests to every operation must get no server error, only
 * documented statuses and content types, and bodies that match the documented schemas. The run is
 * bounded (examples per operation, and a time limit). Without schemathesis this fails:
 * scripts/test-tools.sh installs it (npm test runs it first), or set SCHEMATHESIS to its path.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type RunningService, startService } from "../support/service.ts";

/** Where scripts/test-tools.sh installs it, unless SCHEMATHESIS says otherwise. */
const BIN =
  process.env.SCHEMATHESIS ??
  join(
    process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
    "sms-service/schemathesis/bin/schemathesis",
  );
const TIME_LIMIT_MS = 240_000;

let service: RunningService;
let credentials: { apiKey: string; apiSecret: string };

beforeAll(async () => {
  // Generous limits: the fuzzer must meet the API's rules, not the rate limit.
  service = await startService({ SMS_RATE_LIMIT_RPS: "0", SMS_AUTH_FAILURES_PER_MIN: "0" });
  credentials = await service.createAccount({ credit: 1000 });
});
afterAll(() => service?.close());

function run(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(BIN, args, {
      env: {
        ...process.env,
        NO_COLOR: "1",
        // test/rest/fuzz_credentials.py puts the account's credentials into generated requests.
        PYTHONPATH: dirname(fileURLToPath(import.meta.url)),
        SCHEMATHESIS_HOOKS: "fuzz_credentials",
        FUZZ_API_KEY: credentials.apiKey,
        FUZZ_API_SECRET: credentials.apiSecret,
      },
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), TIME_LIMIT_MS);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

it(
  "schemathesis finds no server error and no answer outside the OpenAPI document",
  async () => {
    expect(
      existsSync(BIN),
      `schemathesis not found at ${BIN}: run scripts/test-tools.sh (npm test does) or set SCHEMATHESIS`,
    ).toBe(true);
    const fuzz = (workers: number) =>
      run([
        "run",
        `${service.baseUrl}/openapi.json`,
        "--checks",
        "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        "150",
        "--seed",
        "20251123",
        "--request-timeout",
        "10",
        "--workers",
        String(workers),
        "--generation-database",
        "none",
      ]);
    let { code, output } = await fuzz(2);
    // Hypothesis can crash inside itself while describing a filter's lambda from two worker
    // threads (ast.parse in lambda_sources.py: "AST constructor recursion depth mismatch"): that
    // is the tool failing, not a finding, so the run is made again on one thread, where it cannot.
    if (code !== 0 && /hypothesis\/internal\/lambda_sources\.py/.test(output)) {
      console.log(output.slice(-3000));
      ({ code, output } = await fuzz(1));
    }
    // The summary, in the CI log whatever the outcome.
    console.log(output.slice(-3000));
    expect(output).toMatch(/passed/);
    expect(code, output.slice(-4000)).toBe(0);
  },
  2 * TIME_LIMIT_MS + 30_000,
);
