import { pino } from "pino";
import { Notifier, type NotifierOptions } from "../../src/notifier/notifier.ts";
import type { Store } from "../../src/store/database.ts";

/**
 * Notifiers for tests against loopback receivers: short retries (100, 200 ms) and sweeps, a 2 s
 * request timeout, private addresses allowed, silent; `defaults` and each call's options override
 * those. `stopAll` stops every notifier made since the last call.
 */
export function testNotifiers(store: () => Store, defaults: Partial<NotifierOptions> = {}) {
  const made: Notifier[] = [];
  return {
    make(tag: string, options: Partial<NotifierOptions> = {}): Notifier {
      const notifier = new Notifier({
        store: store(),
        logger: pino({ level: "silent" }),
        instanceId: tag,
        retrySchedule: [100, 200],
        timeoutMs: 2000,
        allowPrivate: true,
        sweepIntervalMs: 200,
        ...defaults,
        ...options,
      });
      made.push(notifier);
      return notifier;
    },
    /** What the composition root does when this process queues an inbound webhook. */
    wakeInbound(): void {
      for (const notifier of made) notifier.wakeInbound();
    },
    async stopAll(): Promise<void> {
      await Promise.all(made.splice(0).map((notifier) => notifier.stop()));
    },
  };
}
