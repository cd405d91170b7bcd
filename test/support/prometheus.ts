/**
 * Debian's Prometheus (`apt-get install prometheus`, as scripts/system-tools.sh does), started on a free loopback
 * port with a generated scrape config and its own data directory, for the operations tests: the
 * service's /metrics as a real Prometheus scrapes and stores them, read back through its HTTP
 * query API.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestPrometheus {
  url: string;
  /** GET of an API path (e.g. /api/v1/rules), parsed. */
  api(path: string): Promise<any>;
  /** The value of an instant query's single sample; undefined when the query returns none. */
  value(query: string): Promise<number | undefined>;
  /** Every series of an instant query, with its labels and value. */
  series(query: string): Promise<{ labels: Record<string, string>; value: number }[]>;
  stop(): Promise<void>;
}

/** SMS_TEST_SKIP_PROMETHEUS=1 skips the Prometheus tests; a missing one never does (CI sets none). */
export const prometheusTestsSkipped = process.env.SMS_TEST_SKIP_PROMETHEUS === "1";

/** Throws, saying how to install them, unless the prometheus and promtool binaries are on the PATH. */
export function requirePrometheus(): void {
  try {
    execFileSync("prometheus", ["--version"], { stdio: "ignore" });
    execFileSync("promtool", ["--version"], { stdio: "ignore" });
  } catch {
    throw new Error(
      "no prometheus/promtool on the PATH: install Debian's prometheus (sudo apt-get install -y prometheus), or skip these tests with SMS_TEST_SKIP_PROMETHEUS=1",
    );
  }
}

/**
 * Scrapes `target` (host:port serving /metrics) every `intervalS` seconds as job "sms", and
 * evaluates the rules of `ruleFiles`.
 */
export async function startPrometheus(
  target: string,
  options: { intervalS?: number; ruleFiles?: string[] } = {},
): Promise<TestPrometheus> {
  const intervalS = options.intervalS ?? 1;
  const dir = mkdtempSync(join(tmpdir(), "sms-prometheus-"));
  const config = join(dir, "prometheus.yml");
  writeFileSync(
    config,
    [
      "global:",
      `  scrape_interval: ${intervalS}s`,
      `  evaluation_interval: ${intervalS}s`,
      ...(options.ruleFiles?.length
        ? ["rule_files:", ...options.ruleFiles.map((file) => `  - ${JSON.stringify(file)}`)]
        : []),
      "scrape_configs:",
      "  - job_name: sms",
      `    scrape_timeout: ${intervalS}s`,
      "    static_configs:",
      `      - targets: ["${target}"]`,
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const child: ChildProcess = spawn(
    "prometheus",
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`prometheus exited: ${stderr}`);
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (i > 300) throw new Error(`prometheus not ready after 30 s: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  const query = async (expr: string) => {
    const response = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await response.json()) as {
      status: string;
      error?: string;
      data: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== "success") throw new Error(`query ${expr}: ${body.error}`);
    return body.data.result.map((r) => ({ labels: r.metric, value: Number(r.value[1]) }));
  };
  return {
    url,
    api: async (path) => (await fetch(`${url}${path}`)).json(),
    series: query,
    async value(expr) {
      const result = await query(expr);
      if (result.length > 1)
        throw new Error(`query ${expr}: ${result.length} series, expected one`);
      return result[0]?.value;
    },
    async stop() {
      child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
