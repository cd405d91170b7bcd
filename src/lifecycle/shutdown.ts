// Graceful shutdown on SIGTERM and SIGINT. What has started is closed in the reverse order of
// starting: the app first (it stops accepting, answers new requests 503, lets running ones
// finish, then stops its background work), then the database client, then an embedded database;
// then the process exits 0. A signal during start-up closes what exists so far; a start that
// fails closes it too, and exits 1.

export interface ShutdownLogger {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

// Before the app's logger exists: one line on stderr.
const consoleLogger: ShutdownLogger = {
  info: (fields, message) => console.error(withFields(message, fields)),
  error: (fields, message) => console.error(withFields(message, fields)),
};

function withFields(message: string, fields: object): string {
  return Object.keys(fields).length > 0 ? `${message} ${JSON.stringify(fields)}` : message;
}

export class Shutdown {
  private readonly closers: { name: string; close: () => Promise<void> }[] = [];
  private started = false;
  private logger = consoleLogger;

  /** `graceMs`: past it, the process exits 1 with whatever is still running. */
  constructor(private readonly graceMs: number) {}

  /** From now on, log through the app's logger. */
  useLogger(logger: ShutdownLogger): void {
    this.logger = logger;
  }

  /** Something to close at shutdown, before everything added earlier. */
  add(name: string, close: () => Promise<void>): void {
    this.closers.push({ name, close });
  }

  /**
   * Closes on the first SIGTERM or SIGINT. Repeats are ignored, not taken as "hurry": Ctrl-C
   * under `npm start` reaches node twice (from the terminal and relayed by npm).
   */
  listen(signals: readonly NodeJS.Signals[] = ["SIGTERM", "SIGINT"]): void {
    for (const signal of signals) process.on(signal, () => void this.run(signal));
  }

  /**
   * A start that failed: `message` is logged (one line), what has started is closed, and the
   * process exits 1. During a shutdown already under way, that shutdown ends the process.
   */
  async fail(message: string): Promise<never> {
    if (!this.started) {
      this.started = true;
      this.logger.error({}, message);
      await this.closeAll();
      process.exit(1);
    }
    return new Promise<never>(() => undefined);
  }

  private async run(signal: NodeJS.Signals): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.logger.info({ signal }, "shutting down: finishing in-flight requests");
    if (!(await this.closeAll())) process.exit(1);
    this.logger.info({}, "shut down");
    process.exit(0);
  }

  /** Closes everything, newest first, within the grace; false when a step failed. */
  private async closeAll(): Promise<boolean> {
    const force = setTimeout(() => {
      this.logger.error({ graceMs: this.graceMs }, "shutdown took too long; exiting anyway");
      process.exit(1);
    }, this.graceMs);
    force.unref();
    let step = "";
    try {
      for (const { name, close } of [...this.closers].reverse()) {
        step = name;
        await close();
      }
      return true;
    } catch (err) {
      this.logger.error({ err, step }, "shutdown failed");
      return false;
    } finally {
      clearTimeout(force);
    }
  }
}
