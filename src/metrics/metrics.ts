import type { Db } from "mongodb";
import { collectDefaultMetrics, Registry } from "prom-client";
import type { Carrier } from "../delivery/carrier.ts";
import type { Store } from "../store/database.ts";
import { failoverCounter, measuredCarrier } from "./carrier.ts";
import { type ChangeStreamMetrics, changeStreamMetrics } from "./change-stream.ts";
import { type DatabaseMetrics, databaseMetrics } from "./database.ts";
import { type IntakeMetrics, intakeMetrics } from "./intake.ts";
import { queueMetrics } from "./queues.ts";
import { type RequestMetrics, requestMetrics } from "./requests.ts";
import { type WebhookMetrics, webhookMetrics } from "./webhooks.ts";

// The service's metrics (docs/design.md, "Operations"): one registry per built service, so two services
// in one process (tests) never mix their counts. Names: `sms_` prefix, base units, counters
// ending in `_total`; no label holds a phone number, an id, a text, a URL, a credential or an
// account. The runtime's own (event-loop delay, heap, GC) come from prom-client's defaults,
// under their usual names.

export interface Metrics {
  registry: Registry;
  requests: RequestMetrics;
  intake: IntakeMetrics;
  webhooks: WebhookMetrics;
  changeStream: ChangeStreamMetrics;
  /** Makes the service's collections time their operations. */
  database: DatabaseMetrics;
  /** Reports the shared queues' depth from `store` (instances that run the workers do). */
  reportQueues(store: Store): void;
  /** The carrier wrapped so its submissions are counted and timed. */
  /** `name`: its `carrier` label (the plan's name; default the adapter's). */
  carrier(carrier: Carrier, name?: string): Carrier;
  /** With several carriers: counts messages moved between the plan's `carriers` (from, to). */
  failovers(carriers: readonly string[]): (from: string, to: string, messages: number) => void;
}

export function createMetrics(db: Db): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    database: databaseMetrics(registry, db),
    reportQueues: (store) => queueMetrics(registry, store),
    requests: requestMetrics(registry),
    intake: intakeMetrics(registry),
    webhooks: webhookMetrics(registry),
    changeStream: changeStreamMetrics(registry),
    carrier: (carrier, name) => measuredCarrier(carrier, registry, name),
    failovers: (carriers) => failoverCounter(registry, carriers),
  };
}
