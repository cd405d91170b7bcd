/**
 * A port that cannot be had ends the start before any background work (issue 25 item 2.11): with
 * METRICS_PORT (or GRPC_PORT) taken, the service as an operator runs it (`src/main.ts`, SMPP
 * carrier on the test SMSC) exits 1 with one error line naming the setting and its port, no stack
 * trace, and the SMSC never saw a bind. Before, the binds and both workers were up when an
 * uncaught EADDRINUSE ended the process.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:net";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestDatabase, testDatabase, testServer } from "../support/database.ts";
import { ADMIN_TOKEN } from "../support/service.ts";
import { startSmsc, type TestSmsc } from "../support/smsc.ts";

let database: TestDatabase;
let smsc: TestSmsc;
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  database = await testDatabase({ label: "start_up_failure" });
  smsc = await startSmsc();
  // A port some other program holds.
  taken = createServer();
  taken.listen(0, "127.0.0.1");
  await once(taken, "listening");
  takenPort = (taken.address() as { port: number }).port;
});

afterAll(async () => {
  taken?.close();
  await smsc?.stop();
  await database?.close();
});

/** Runs the service to its end; resolves with its exit code and every line it wrote. */
async function runService(env: Record<string, string>) {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: {
      ...process.env,
      MONGODB_URI: testServer().uri,
      MONGODB_DATABASE: database.name,
      HOST: "127.0.0.1",
      PORT: "0",
      GRPC_PORT: "0",
      METRICS_PORT: "0",
      OPERATOR_PORT: "0",
      SMS_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: "info",
      SMS_CARRIER: "smpp",
      SMS_SMPP_URL: smsc.url,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on("line", (line) => lines.push(line));
  }
  const [code] = (await once(child, "exit")) as [number | null];
  // The last lines may still be in the pipes.
  await new Promise((resolve) => setImmediate(resolve));
  return { code, lines, output: lines.join("\n") };
}

describe.each([
  ["METRICS_PORT", () => ({ METRICS_PORT: String(takenPort) })],
  ["GRPC_PORT", () => ({ GRPC_PORT: String(takenPort) })],
])("the service with %s taken", (setting, env) => {
  it("exits 1 with one line naming the setting and port, having bound nothing", async () => {
    const binds = (await smsc.pdus({ command: "bind_transceiver" })).length;
    const run = await runService(env());
    expect(run.code, run.output).toBe(1);
    const errors = run.lines.filter((line) => /"level":(50|60)/.test(line));
    expect(errors, run.output).toHaveLength(1);
    expect(errors[0]).toContain(`${setting}=${takenPort}`);
    expect(errors[0]).toContain("the port is in use");
    // No stack trace, no second account of the failure.
    expect(run.output).not.toMatch(/^\s+at /m);
    expect(run.lines.filter((line) => line.includes(String(takenPort)))).toHaveLength(1);
    // No background work began: the carrier never bound.
    expect((await smsc.pdus({ command: "bind_transceiver" })).length).toBe(binds);
  }, 60_000);
});
