/**
 * The part of a pino logger that the background work uses (delivery, the carrier links, the
 * notifier): any pino logger, or a child of Fastify's, is one.
 */
export interface Logger {
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
  debug(obj: unknown, msg?: string): void;
}
