import type { FastifyBaseLogger, FastifyServerOptions } from "fastify";
import type { Bindings, Logger } from "pino";

// Fastify makes a child logger for every request, binding its reqId. pino's `child` runs the
// redaction of logging.ts over the bindings: 2.4–3.9 µs per request, 2–3 % of a single send's
// busy CPU (issue 43), paid even when nothing is written through it, as at warn and above. So
// the child is made when first written at an enabled level. At info Fastify writes each request's
// lines through it, and it is made for the first, as before.

type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";
type Write = (...args: unknown[]) => void;

/** A request's logger, its pino child made on first use. */
export class LazyRequestLogger {
  /** The pino child, once made: the logger logging.ts's mixin sees. */
  made: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
  ) {}

  private own(): Logger {
    this.made ??= this.parent.child(this.bindings);
    return this.made;
  }

  private write(level: Level, args: unknown[]): void {
    if (!this.made && !this.parent.isLevelEnabled(level)) return;
    (this.own()[level] as Write)(...args);
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.own().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.made ?? this.parent).isLevelEnabled(level);
  }

  fatal(...args: unknown[]): void {
    this.write("fatal", args);
  }
  error(...args: unknown[]): void {
    this.write("error", args);
  }
  warn(...args: unknown[]): void {
    this.write("warn", args);
  }
  info(...args: unknown[]): void {
    this.write("info", args);
  }
  debug(...args: unknown[]): void {
    this.write("debug", args);
  }
  trace(...args: unknown[]): void {
    this.write("trace", args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: object): Logger {
    return this.own().child(bindings, options);
  }
}

/**
 * Fastify's `childLoggerFactory`: a lazy request logger, or pino's child at once for a route
 * with a level or serializers of its own.
 */
export const requestLoggers: NonNullable<FastifyServerOptions["childLoggerFactory"]> = (
  logger,
  bindings,
  options,
) => {
  if (options.level !== undefined || options.serializers !== undefined)
    return logger.child(bindings, options);
  return new LazyRequestLogger(logger as Logger, bindings) as unknown as FastifyBaseLogger;
};
