import type { Config } from "./config/config.ts";
import type { ClaimedMessage } from "./delivery/delivery-claims.ts";
import { OptOutRules } from "./services/opt-out-rules.ts";
import type { Store } from "./store/database.ts";
import { type OptOutStore, openOptOuts } from "./store/opt-outs.ts";
import { IdAllocator } from "./store/sequences.ts";

/** Schedules an account's new work: its delivery and notification lanes, and a worker wake-up. */
export type Schedule = (accountId: string, deliveryAt: Date, acceptedAt: Date) => Promise<void>;

export interface TwoWay {
  optOuts: OptOutStore;
  rules: OptOutRules;
  /** What the services take (services/routes.ts). */
  serviceDeps: {
    optOuts: OptOutStore;
    optOutRules: OptOutRules;
    optedOut: OptOutRules["refusedAmong"];
    carrier: Config["carrier"];
  };
  /** The delivery worker's last check before the carrier. */
  screen: (messages: readonly ClaimedMessage[]) => Promise<ReadonlySet<number>>;
}

/** The opt-out side of two-way messaging, assembled for app.ts (design "Two-way messaging"). */
export function twoWay(store: Store, config: Config, schedule: Schedule): TwoWay {
  const optOuts = openOptOuts(store.db);
  const rules = new OptOutRules({
    store,
    optOuts,
    // Replies are few: small blocks of the message sequence.
    messageIds: new IdAllocator(store.counters, "message", 20),
    pricePerPartMicros: config.pricePerPartMicros,
    onQueued: schedule,
  });
  return {
    optOuts,
    rules,
    serviceDeps: {
      optOuts,
      optOutRules: rules,
      optedOut: (accountId, numbers, options) => rules.refusedAmong(accountId, numbers, options),
      carrier: config.carrier,
    },
    screen: (messages) => rules.screen(messages),
  };
}
