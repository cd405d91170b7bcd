// The app's last steps on close (the gRPC port, background work, buffered writes) wait on the
// database or on peers. None may hold close() past the shutdown grace: what a step leaves undone
// is in the database (leases expire and the work is taken up again, the settler resolves pending
// charges), so a step still running at the deadline is logged and left behind.

export interface CloseStep {
  name: string;
  run: () => Promise<void>;
}

const LONGEST_TIMER_MS = 2 ** 31 - 1;

interface CloseLogger {
  warn(fields: object, message: string): void;
}

/** Runs `steps` in order until `deadlineMs` (epoch ms); errors of steps that finish in time propagate. */
export async function runCloseSteps(
  steps: readonly CloseStep[],
  deadlineMs: number,
  logger: CloseLogger,
): Promise<void> {
  for (const step of steps) {
    const running = step.run();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((resolve) => {
      // Node fires a delay past its timers' limit (about 24.8 days, or Infinity) at once.
      const left = Math.min(Math.max(0, deadlineMs - Date.now()), LONGEST_TIMER_MS);
      timer = setTimeout(() => resolve("late"), left);
    });
    const outcome = await Promise.race([running.then(() => "done" as const), late]).finally(() =>
      clearTimeout(timer),
    );
    if (outcome === "late") {
      logger.warn({ step: step.name }, "closing: a step did not finish in time and is left behind");
      running.catch((err: unknown) =>
        logger.warn({ err, step: step.name }, "closing: a late step failed"),
      );
    }
  }
}
