import { Counter, Histogram, type Registry } from "prom-client";

// The notifier's change stream: events seen, and how long after its write each arrived. A
// growing delay means webhooks wait for the stream (the periodic sweep still catches up).

export interface ChangeStreamMetrics {
  /** An event; `writtenAt` when the event tells the time of its write. */
  event(writtenAt: Date | undefined, now: number): void;
}

export function changeStreamMetrics(registry: Registry): ChangeStreamMetrics {
  const events = new Counter({
    name: "sms_change_stream_events_total",
    help: "Change events on messages seen by this instance's notifier",
    registers: [registry],
  });
  const delay = new Histogram({
    name: "sms_change_stream_delay_seconds",
    help: "Time from a write on messages to its change event reaching the notifier",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  return {
    event(writtenAt, now) {
      events.inc();
      // Clocks of server and instance differ a little: a negative delay is noise, not a value.
      if (writtenAt) delay.observe(Math.max(0, now - writtenAt.getTime()) / 1000);
    },
  };
}
