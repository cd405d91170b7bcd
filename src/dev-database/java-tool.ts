/**
 * Runs a small Java tool of the project (the test database emulator, the test SMSC): starts its
 * jar, waits for the line that says it is ready, and stops it. The JVM watches its stdin: when this
 * process goes away the pipe closes and the JVM exits, so a tool never outlives its parent, and it
 * does not keep this process alive either. It runs in a process group of its own, so a signal to
 * the service's group (Ctrl-C) does not reach it: the service stops it when it is done with it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";

export interface JavaToolOptions {
  /** Name in log lines and errors, e.g. "emulator". */
  name: string;
  cwd: string;
  /** JVM options, `-jar <jar>` and the tool's own arguments. */
  args: string[];
  /** The line that says the tool is ready; its groups are handed back. */
  ready: RegExp;
  readyTimeoutMs: number;
  log: (line: string) => void;
}

export interface RunningJavaTool {
  child: ChildProcess;
  /** The ready line, matched. */
  ready: RegExpExecArray;
  /** Closes its stdin, then SIGTERM, then SIGKILL, 5 s apart. */
  stop(): Promise<void>;
  /** SIGKILL at once (a crash, for tests). */
  kill(): Promise<void>;
}

export async function startJavaTool(options: JavaToolOptions): Promise<RunningJavaTool> {
  const { name, log } = options;
  const child = spawn("java", options.args, {
    stdio: ["pipe", "pipe", "pipe"],
    cwd: options.cwd,
    // Its own process group: a terminal's Ctrl-C goes to the foreground group only, so the tool
    // (the embedded database above all) lives on while the service drains, and is stopped by it.
    detached: true,
  });
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);

  const stderrTail: string[] = [];
  createInterface({ input: child.stderr }).on("line", (line) => {
    stderrTail.push(line);
    if (stderrTail.length > 50) stderrTail.shift();
    log(`${name}: ${line}`);
  });
  const exited = once(child, "exit").then(
    ([code, signal]) => ({ code, signal }),
    () => ({ code: null, signal: null }), // an "error" event (spawn failed) comes first
  );
  const spawnFailed = once(child, "error").then(([err]) => err as Error);

  let ready: RegExpExecArray;
  try {
    ready = await new Promise<RegExpExecArray>((resolveReady, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${name} did not report ready within ${options.readyTimeoutMs} ms`)),
        options.readyTimeoutMs,
      );
      createInterface({ input: child.stdout }).on("line", (line) => {
        const match = options.ready.exec(line);
        if (match) {
          clearTimeout(timer);
          resolveReady(match);
        } else {
          log(`${name}: ${line}`);
        }
      });
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(
          new Error(
            `${name} exited before ready (code ${code}, signal ${signal}): ${stderrTail.join("\n")}`,
          ),
        );
      });
      void spawnFailed.then((err) => {
        clearTimeout(timer);
        reject(new Error(`cannot start java (is a JDK 17+ on PATH?): ${err.message}`));
      });
    });
  } catch (err) {
    child.kill("SIGKILL");
    process.removeListener("exit", killOnExit);
    throw err;
  }

  child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr]) {
    (stream as unknown as { unref?: () => void } | null)?.unref?.();
  }

  const running = () => child.exitCode === null && child.signalCode === null;
  let stopping: Promise<void> | undefined;
  return {
    child,
    ready,
    stop: () => {
      stopping ??= (async () => {
        if (running()) {
          child.stdin.end();
          if (!(await settlesWithin(exited, 5_000))) {
            child.kill("SIGTERM");
            if (!(await settlesWithin(exited, 5_000))) {
              child.kill("SIGKILL");
              await exited;
            }
          }
        }
        process.removeListener("exit", killOnExit);
      })();
      return stopping;
    },
    kill: async () => {
      if (running()) {
        child.kill("SIGKILL");
        await exited;
      }
      process.removeListener("exit", killOnExit);
    },
  };
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  const result = await Promise.race([promise.then(() => true as const), timeout]);
  clearTimeout(timer);
  return result;
}
