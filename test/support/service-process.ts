/**
 * The service in a child process, as an operator runs it, listening on real sockets: for tests
 * that signal it (SIGTERM, SIGKILL). Ports are chosen by the system (PORT=0) and read from its
 * log lines; its output is read continuously (a full pipe would stall it) and the last lines are
 * kept for failure messages.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { testServer } from "./database.ts";
import { ADMIN_TOKEN } from "./service.ts";

/** How the service is started: `npm start` (build, then node on dist/), or the sources under tsx's loader. */
export type ServiceCommand = "npm start" | "source";

export interface ServiceProcess {
  pid: number;
  /** http://127.0.0.1:<port> of REST, Connect and gRPC-Web. */
  baseUrl: string;
  grpcUrl: string;
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when a log line matching `pattern` appears from now on. */
  logged(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** The last lines of its output, for failure messages. */
  output(): string;
  /** Signals the process (for `npm start`: npm, which relays it to node). */
  signal(signal: NodeJS.Signals): void;
  /** SIGKILL to the whole process group (npm, its shell, node): nothing survives. */
  kill(): Promise<void>;
  createAccount(credit: number): Promise<{ apiKey: string; apiSecret: string }>;
}

const KEPT_LINES = 60;

/** Starts the service on database `dbName` of the test server; resolves once both ports listen. */
export async function startServiceProcess(
  command: ServiceCommand,
  dbName: string,
  env: Record<string, string> = {},
  startTimeoutMs = 90_000,
): Promise<ServiceProcess> {
  const [file, args] =
    command === "npm start"
      ? ["npm", ["start", "--silent"]]
      : [process.execPath, ["--import", "tsx", "src/main.ts"]];
  const child: ChildProcess = spawn(file, args, {
    env: {
      ...process.env,
      MONGODB_URI: testServer().uri,
      MONGODB_DATABASE: dbName,
      PORT: "0",
      GRPC_PORT: "0",
      // No metrics listener: its default port would be shared by every process of the run.
      METRICS_PORT: "0",
      // No console either: its default port would be shared too.
      OPERATOR_PORT: "0",
      HOST: "127.0.0.1",
      SMS_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: "info",
      ...env,
    },
    // Its own process group, so kill() reaches npm's children too.
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const pid = child.pid ?? 0;
  const exited = once(child, "exit").then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  // A test that fails half-way must not leave the service running.
  const killOnExit = () => killGroup(pid);
  process.once("exit", killOnExit);
  void exited.then(() => process.off("exit", killOnExit));

  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  const onLine = (line: string) => {
    lines.push(line);
    if (lines.length > KEPT_LINES) lines.shift();
    for (const waiter of [...waiters]) {
      if (waiter.pattern.test(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  };
  if (child.stdout) createInterface({ input: child.stdout }).on("line", onLine);
  if (child.stderr) createInterface({ input: child.stderr }).on("line", onLine);
  const output = () => lines.join("\n");

  const logged = (pattern: RegExp, timeoutMs = 60_000) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`no log line ${pattern} within ${timeoutMs} ms; output:\n${output()}`));
      }, timeoutMs);
      waiters.push({
        pattern,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`exited (${code ?? signal}) before ${pattern}; output:\n${output()}`));
      });
    });

  try {
    const [http, grpc] = await Promise.all([
      logged(/Server listening at http:\/\/127\.0\.0\.1:\d+/, startTimeoutMs),
      logged(/"port":\d+,"msg":"gRPC and Connect/, startTimeoutMs),
    ]);
    const port = /127\.0\.0\.1:(\d+)/.exec(http)?.[1];
    const grpcPort = /"port":(\d+)/.exec(grpc)?.[1];
    const baseUrl = `http://127.0.0.1:${port}`;
    const admin = createClient(
      AdminService,
      createConnectTransport({ baseUrl, httpVersion: "1.1" }),
    );
    return {
      pid,
      baseUrl,
      grpcUrl: `http://127.0.0.1:${grpcPort}`,
      exited,
      logged,
      output,
      signal: (signal) => child.kill(signal),
      kill: async () => {
        killGroup(pid);
        await exited;
      },
      async createAccount(credit) {
        const created = await admin.createAccount(
          { name: "process test", creditMicros: BigInt(Math.round(credit * 1_000_000)) },
          { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
        );
        return { apiKey: created.account?.apiKey ?? "", apiSecret: created.apiSecret };
      },
    };
  } catch (error) {
    killGroup(pid);
    throw error;
  }
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // already gone
  }
}
