import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

export interface ServiceProcess {
  baseUrl: string;
  pid: number;
  /** The env it was given, with each FREE_PORT replaced by the port chosen. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

function serviceLog(): "ignore" | number {
  const path = process.env.BENCH_SERVICE_LOG;
  return path ? openSync(path, "a") : "ignore";
}

/**
 * How a script is run: the service as `npm start` runs it, from its build (`dist/`, made by
 * `buildService` at the start of a run) when the checkout has one; anything else, and a checkout
 * without a build, through tsx.
 */
function entry(script: string, cwd: string | undefined): string[] {
  const built = join(cwd ?? ".", "dist/src/main.js");
  if (script === "src/main.ts" && existsSync(built)) return ["--enable-source-maps", built];
  return ["--import", "tsx", script];
}

/**
 * Collects the heap of the emulator's JVM `pid` (`jcmd GC.run`); nothing without one (another
 * database). A failure is only reported to `onError`: the figure goes on.
 */
export async function collectEmulatorHeap(
  pid: string | undefined,
  onError: (error: Error) => void = () => {},
): Promise<void> {
  if (pid) await promisify(execFile)("jcmd", [pid, "GC.run"]).catch(onError);
}

/**
 * The emulator's JVM heap `pid`: bytes in use (garbage not collected yet included) and the most
 * it may grow to; undefined without an emulator or when jcmd fails.
 */
export async function emulatorHeap(
  pid: string | undefined,
): Promise<{ usedBytes: number; maxBytes: number } | undefined> {
  if (!pid) return undefined;
  const run = promisify(execFile);
  try {
    const [info, flags] = await Promise.all([
      run("jcmd", [pid, "GC.heap_info"]),
      run("jcmd", [pid, "VM.flags"]),
    ]);
    // "... generation total 631808K, used 1018K ..." for each generation.
    let usedKiB = 0;
    for (const [, used] of info.stdout.matchAll(/generation\s+total \d+K, used (\d+)K/g))
      usedKiB += Number(used);
    const max = /MaxHeapSize=(\d+)/.exec(flags.stdout)?.[1];
    return max ? { usedBytes: usedKiB * 1024, maxBytes: Number(max) } : undefined;
  } catch {
    return undefined;
  }
}

/** `npm run build` in `cwd` (the production build `npm start` runs), when its package has one. */
export async function buildService(cwd = "."): Promise<void> {
  const scripts = JSON.parse(readFileSync(join(cwd, "package.json"), "utf8")).scripts ?? {};
  if (!scripts.build) return;
  const child = spawn("npm", ["run", "--silent", "build"], {
    cwd,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const [code] = await once(child, "exit");
  if (code !== 0) throw new Error(`npm run build failed in ${cwd} (exit ${code})`);
}

/** An env value `startProcess` replaces with a free port (`ServiceProcess.env` tells which). */
export const FREE_PORT = "free port";

/**
 * Runs `src/main.ts` (or another script) in a child process and waits for it to answer. `cwd`: the
 * directory the script path is relative to (another checkout, for a baseline commit). A port
 * picked free may be taken by another program before the child binds it (the machine is shared):
 * a child that exits while starting is started again on other ports, up to three times.
 */
export async function startProcess(
  script: string,
  env: Record<string, string>,
  readyPath = "/health",
  cwd?: string,
): Promise<ServiceProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(script, env, readyPath, cwd);
    } catch (error) {
      if (!(error instanceof ExitedWhileStarting) || attempt === 3) throw error;
    }
  }
}

class ExitedWhileStarting extends Error {}

async function startOnce(
  script: string,
  env: Record<string, string>,
  readyPath: string,
  cwd: string | undefined,
): Promise<ServiceProcess> {
  const port = await freePort();
  const chosen: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    chosen[name] = value === FREE_PORT ? String(await freePort()) : value;
  }
  const nodeOptions = (process.env.BENCH_NODE_OPTIONS ?? "").split(" ").filter(Boolean);
  const log = serviceLog();
  const child: ChildProcess = spawn(process.execPath, [...nodeOptions, ...entry(script, cwd)], {
    env: {
      ...process.env,
      PORT: String(port),
      GRPC_PORT: String(await freePort()),
      // Off unless a figure asks (figure 13 compares both): the figures before it had none.
      METRICS_PORT: "0",
      HOST: "127.0.0.1",
      ...chosen,
    },
    // BENCH_SERVICE_LOG=<file> keeps the services' logs (appended) to find why a figure failed.
    stdio: ["ignore", log, "inherit"],
    ...(cwd && { cwd }),
  });
  // The child has its own copy of the log's descriptor.
  if (typeof log === "number") closeSync(log);
  // A benchmark that fails half-way must not leave its services running.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) {
      process.off("exit", killOnExit);
      throw new ExitedWhileStarting(`${script} exited with ${child.exitCode}`);
    }
    try {
      const response = await fetch(`${baseUrl}${readyPath}`, {
        method: readyPath === "/health" ? "GET" : "POST",
      });
      if (response.status < 500) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      process.off("exit", killOnExit);
      child.kill("SIGKILL");
      throw new Error(`${script} did not start`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    baseUrl,
    pid: child.pid ?? 0,
    env: chosen,
    async stop() {
      process.off("exit", killOnExit);
      child.kill("SIGTERM");
      if (child.exitCode === null) await once(child, "exit");
    },
  };
}

/** Resident set size of a process, in bytes, from /proc. */
export function residentBytes(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) * 1024 : 0;
}

/** Linux's USER_HZ, the unit of /proc/PID/stat's times (`getconf CLK_TCK`). */
const CLOCK_TICKS = 100;

/** CPU seconds (user and system) a process has used so far, from /proc. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command's ")".
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

export function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

/** The standard error of the mean of `values` (their sample deviation over √n); NaN below two. */
export function standardError(values: number[]): number {
  const n = values.length;
  if (n < 2) return Number.NaN;
  const mean = values.reduce((sum, value) => sum + value, 0) / n;
  const variance = values.reduce((sum, value) => sum + (value - mean) ** 2, 0) / (n - 1);
  return Math.sqrt(variance / n);
}
