import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Carrier, CarrierPart, SubmitResult } from "../delivery/carrier.ts";

// The carrier seen from the delivery worker: a wrapper around whichever adapter is configured
// (simulator or SMPP), so neither adapter nor worker changes for metrics. Submissions are timed
// and counted as the worker sees them; what only the adapter knows (binds, the SMSC's throttling)
// is read from its status() at scrape time.

export function measuredCarrier(carrier: Carrier, registry: Registry): Carrier {
  const registers = [registry];
  const labels = { carrier: carrier.name };
  const parts = new Counter({
    name: "sms_carrier_submitted_parts_total",
    help: "Parts handed to the carrier, by result: accepted, refused (by the carrier), error (carrier unreachable)",
    labelNames: ["carrier", "result"],
    registers,
  });
  const latency = new Histogram({
    name: "sms_carrier_submit_duration_seconds",
    help: "Time from handing a group of parts to the carrier to its answer for all of them",
    labelNames: ["carrier"],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  let inFlight = 0;
  new Gauge({
    name: "sms_carrier_window_in_use",
    help: "Parts submitted and not answered yet",
    labelNames: ["carrier"],
    registers,
    collect() {
      this.set(labels, inFlight);
    },
  });
  new Gauge({
    name: "sms_carrier_window_size",
    help: "Parts the carrier takes in flight at most (SMPP: the window of every bind)",
    labelNames: ["carrier"],
    registers,
    collect() {
      this.set(labels, carrier.limits.window);
    },
  });
  new Gauge({
    name: "sms_carrier_bound",
    help: "1 while the carrier can take submissions (SMPP: at least one bind up; the simulator always)",
    labelNames: ["carrier"],
    registers,
    collect() {
      this.set(labels, carrier.status?.().state === "unbound" ? 0 : 1);
    },
  });
  new Gauge({
    name: "sms_carrier_binds",
    help: "SMPP binds by state (bound, binding, waiting for a rebind, ...)",
    labelNames: ["carrier", "state"],
    registers,
    collect() {
      this.reset();
      const binds = carrier.status?.().binds;
      if (!Array.isArray(binds)) return;
      for (const bind of binds as { state: string }[]) this.inc({ ...labels, state: bind.state });
    },
  });
  // The adapter counts the SMSC's throttling answers; the counter follows its total.
  let throttledSeen = 0;
  new Counter({
    name: "sms_carrier_throttled_total",
    help: "Submissions the SMSC answered with throttling (ESME_RTHROTTLED, queue full)",
    labelNames: ["carrier"],
    registers,
    collect() {
      const total = carrier.status?.().throttled;
      if (typeof total === "number" && total > throttledSeen) {
        this.inc(labels, total - throttledSeen);
        throttledSeen = total;
      } else this.inc(labels, 0);
    },
  });

  const measured: Carrier = {
    name: carrier.name,
    limits: carrier.limits,
    start: (onReceipts) => carrier.start(onReceipts),
    stop: () => carrier.stop(),
    async submit(given: readonly CarrierPart[]): Promise<SubmitResult[]> {
      const end = latency.startTimer(labels);
      inFlight += given.length;
      try {
        const results = await carrier.submit(given);
        let accepted = 0;
        for (const result of results) if (result.ok) accepted++;
        parts.inc({ ...labels, result: "accepted" }, accepted);
        parts.inc({ ...labels, result: "refused" }, results.length - accepted);
        return results;
      } catch (error) {
        parts.inc({ ...labels, result: "error" }, given.length);
        throw error;
      } finally {
        inFlight -= given.length;
        end();
      }
    },
  };
  if (carrier.status) {
    const status = carrier.status.bind(carrier);
    measured.status = status;
  }
  return measured;
}
