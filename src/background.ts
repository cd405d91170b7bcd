import type { FastifyBaseLogger } from "fastify";
import type { Config } from "./config/config.ts";
import type { Store } from "./store/database.ts";

export interface BackgroundWork {
  /** Tells the delivery worker that new messages are waiting. */
  wake: () => void;
  stop: () => Promise<void>;
}

/** The delivery worker and the notifier of this instance, when the config runs them. */
export function startBackgroundWork(deps: {
  config: Config;
  store: Store;
  instanceId: string;
  logger: FastifyBaseLogger;
}): BackgroundWork {
  if (!deps.config.runWorkers) return { wake: () => undefined, stop: async () => undefined };
  return { wake: () => undefined, stop: async () => undefined };
}
