// A start that fails says so in one log line naming the port or setting at fault, and the process
// exits 1 (lifecycle/shutdown.ts closes what had started). main.ts runs each step of the start
// through these, so no stack trace or unhandled rejection reaches the operator.

/** A failed start, its message the one line to log. */
export class StartupError extends Error {
  override name = "StartupError";
}

/** Runs one step of the start; a failure becomes a StartupError saying `what` failed and why. */
export async function startStep<T>(what: string, run: () => Promise<T> | T): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof StartupError) throw error;
    throw new StartupError(`cannot start: ${what}: ${reason(error)}`);
  }
}

const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: "the port is in use",
  EACCES: "not allowed to listen on that port",
  EADDRNOTAVAIL: "HOST is not an address of this machine",
};

/** Listens with `listen`; a failure names the setting, its port and HOST. */
export function listenOn<T>(
  setting: string,
  port: number,
  host: string,
  listen: () => Promise<T>,
): Promise<T> {
  return startStep(`${setting}=${port} (HOST=${host})`, async () => {
    try {
      return await listen();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "";
      const known = LISTEN_ERRORS[code];
      throw known ? new Error(`${known} (${code})`) : error;
    }
  });
}

/** The one line for anything that ended a start. */
export function startupFailure(error: unknown): string {
  return error instanceof StartupError ? error.message : `cannot start: ${reason(error)}`;
}

function reason(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  // One line: a multi-line message (a driver's, a child process's output) is joined.
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean)
    .join("; ");
}
