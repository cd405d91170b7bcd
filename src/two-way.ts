import type { Config } from "./config/config.ts";
import type { ClaimedMessage } from "./delivery/delivery-claims.ts";
import { InboundIntake } from "./inbound/intake.ts";
import type { Logger } from "./logger.ts";
import { InboundWebhookQueue } from "./notifier/inbound-queue.ts";
import { type OptOutStore, openOptOuts } from "./opt-outs/list.ts";
import { OptOutReads } from "./opt-outs/list-reads.ts";
import { OptOutRules } from "./opt-outs/rules.ts";
import type { Store } from "./store/database.ts";
import { IdAllocator } from "./store/sequences.ts";

/** Schedules an account's new work: its delivery and notification lanes, and a worker wake-up. */
export type Schedule = (accountId: string, deliveryAt: Date, acceptedAt: Date) => Promise<void>;

export interface TwoWay {
  optOuts: OptOutStore;
  rules: OptOutRules;
  /** Mobile-originated messages: stored, then handed to the opt-out rules (src/inbound/). */
  inbound: InboundIntake;
  /** What the services take (services/routes.ts). */
  serviceDeps: {
    optOuts: OptOutStore;
    optOutRules: OptOutRules;
    optedOut: OptOutReads["among"];
    sendChecks: OptOutReads;
    carrier: Config["carrier"];
    inbound: InboundIntake;
  };
  /** The delivery worker's last check before the carrier. */
  screen: (messages: readonly ClaimedMessage[]) => Promise<ReadonlySet<number>>;
}

/** The opt-out side of two-way messaging, assembled for app.ts (design "Two-way messaging"). */
export function twoWay(store: Store, config: Config, schedule: Schedule, logger: Logger): TwoWay {
  const optOuts = openOptOuts(store.db);
  const reads = new OptOutReads(optOuts, store.accounts);
  const rules = new OptOutRules({
    store,
    optOuts,
    // Replies are few: small blocks of the message sequence.
    messageIds: new IdAllocator(store.counters, "message", 20),
    pricePerPartMicros: config.pricePerPartMicros,
    onQueued: schedule,
  });
  const inbound = new InboundIntake({
    db: store.db,
    now: () => store.clock.now(),
    ids: new IdAllocator(store.counters, "inbound"),
    logger,
    // A STOP is on the list before its deliver_sm_resp: the intake answers after the hook.
    onInbound: (message) => rules.applyInbound(message),
    // Stored with its webhook pending when the account has an inbound URL (the notifier sends it).
    webhooks: new InboundWebhookQueue(store, logger),
    reassemblyMs: config.moReassemblyS * 1000,
    defaultAlphabet: config.moDefaultAlphabet,
  });
  return {
    optOuts,
    rules,
    inbound,
    serviceDeps: {
      optOuts,
      optOutRules: rules,
      // Single sends' reads grouped (store/opt-out-reads.ts); a batch's read goes on its own.
      optedOut: (accountId, numbers, options) => reads.among(accountId, numbers, options),
      sendChecks: reads,
      carrier: config.carrier,
      inbound,
    },
    screen: (messages) => rules.screen(messages),
  };
}
