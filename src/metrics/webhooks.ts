import { Counter, Histogram, type Registry } from "prom-client";

// Webhook attempts as the notifier makes them. The backlog (pending notifications, the oldest
// one's age) is read from the database by queues.ts: it is shared by every instance.

/** What an attempt led to: delivered, to be retried, or given up (the retry schedule ran out). */
export type AttemptOutcome = "delivered" | "retry" | "gave_up";

export interface WebhookMetrics {
  attempt(outcome: AttemptOutcome, durationMs: number): void;
}

export function webhookMetrics(registry: Registry): WebhookMetrics {
  const attempts = new Counter({
    name: "sms_webhook_attempts_total",
    help: "Webhook requests made, by outcome: delivered (2xx), retry (failed, retried later), gave_up",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const latency = new Histogram({
    name: "sms_webhook_attempt_duration_seconds",
    help: "Time from a webhook request's start to its answer, failure or timeout",
    labelNames: ["outcome"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  for (const outcome of ["delivered", "retry", "gave_up"]) attempts.inc({ outcome }, 0);
  return {
    attempt(outcome, durationMs) {
      attempts.inc({ outcome });
      latency.observe({ outcome }, durationMs / 1000);
    },
  };
}
