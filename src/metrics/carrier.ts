import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Carrier, CarrierPart, SubmitOptions, SubmitResult } from "../delivery/carrier.ts";

// The carrier seen from the delivery worker: a wrapper around whichever adapter is configured
// (simulator or SMPP), so neither adapter nor worker changes for metrics. Submissions are timed
// and counted as the worker sees them; what only the adapter knows (binds, the SMSC's throttling)
// is read from its status() at scrape time.

/** The carriers measured into one registry: its metrics are made once and read every carrier. */
interface Source {
  labels: { carrier: string };
  carrier: Carrier;
  inFlight: number;
  throttledSeen: number;
  malformedSeen: number;
}

interface CarrierMetrics {
  sources: Source[];
  parts: Counter<"carrier" | "result">;
  latency: Histogram<"carrier">;
}

const made = new WeakMap<Registry, CarrierMetrics>();

function metricsOf(registry: Registry): CarrierMetrics {
  const existing = made.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const sources: Source[] = [];
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
  new Gauge({
    name: "sms_carrier_window_in_use",
    help: "Parts submitted and not answered yet",
    labelNames: ["carrier"],
    registers,
    collect() {
      for (const s of sources) this.set(s.labels, s.inFlight);
    },
  });
  new Gauge({
    name: "sms_carrier_window_size",
    help: "Parts the carrier takes in flight at most (SMPP: the window of every bind)",
    labelNames: ["carrier"],
    registers,
    collect() {
      for (const s of sources) this.set(s.labels, s.carrier.limits.window);
    },
  });
  new Gauge({
    name: "sms_carrier_bound",
    help: "1 while the carrier can take submissions (SMPP: at least one bind up; the simulator always)",
    labelNames: ["carrier"],
    registers,
    collect() {
      for (const s of sources) this.set(s.labels, s.carrier.status?.().state === "unbound" ? 0 : 1);
    },
  });
  new Gauge({
    name: "sms_carrier_binds",
    help: "SMPP binds by state (bound, binding, waiting for a rebind, ...)",
    labelNames: ["carrier", "state"],
    registers,
    collect() {
      this.reset();
      for (const s of sources) {
        const binds = s.carrier.status?.().binds;
        if (!Array.isArray(binds)) continue;
        for (const bind of binds as { state: string }[])
          this.inc({ ...s.labels, state: bind.state });
      }
    },
  });
  new Gauge({
    name: "sms_carrier_circuit_open",
    help: "With several carriers: 1 while the carrier's circuit is open (no new work), 0.5 half-open, 0 closed",
    labelNames: ["carrier"],
    registers,
    collect() {
      for (const s of sources) {
        const circuit = s.carrier.status?.().circuit;
        if (typeof circuit !== "string") continue;
        this.set(s.labels, circuit === "open" ? 1 : circuit === "half-open" ? 0.5 : 0);
      }
    },
  });
  new Gauge({
    name: "sms_carrier_takes_work",
    help: "With several carriers: 1 while the carrier gets new work, 0 while its work fails over to the next carrier of its routes",
    labelNames: ["carrier"],
    registers,
    collect() {
      for (const s of sources) {
        const takes = s.carrier.status?.().takesWork;
        if (typeof takes === "boolean") this.set(s.labels, takes ? 1 : 0);
      }
    },
  });
  // The adapter counts the SMSC's throttling answers; the counter follows its total.
  new Counter({
    name: "sms_carrier_throttled_total",
    help: "Submissions the SMSC answered with throttling (ESME_RTHROTTLED, queue full)",
    labelNames: ["carrier"],
    registers,
    collect() {
      for (const s of sources) {
        const total = s.carrier.status?.().throttled;
        if (typeof total === "number" && total > s.throttledSeen) {
          this.inc(s.labels, total - s.throttledSeen);
          s.throttledSeen = total;
        } else this.inc(s.labels, 0);
      }
    },
  });
  // The SMPP adapter counts the PDUs whose body did not decode (kept in smpp_malformed_pdus).
  new Counter({
    name: "sms_smpp_malformed_pdus_total",
    help: "PDUs from the SMSC whose body did not decode: kept for the operator and answered ESME_RX_P_APPN",
    labelNames: ["carrier"],
    registers,
    collect() {
      for (const s of sources) {
        const total = s.carrier.status?.().malformedPdus;
        if (typeof total !== "number") continue;
        this.inc(s.labels, Math.max(0, total - s.malformedSeen));
        s.malformedSeen = Math.max(s.malformedSeen, total);
      }
    },
  });
  const metrics = { sources, parts, latency };
  made.set(registry, metrics);
  return metrics;
}

/** `name`: the `carrier` label, the carrier's name in the plan (default: the adapter's name). */
export function measuredCarrier(
  carrier: Carrier,
  registry: Registry,
  name = carrier.name,
): Carrier {
  const { sources, parts, latency } = metricsOf(registry);
  const source: Source = {
    labels: { carrier: name },
    carrier,
    inFlight: 0,
    throttledSeen: 0,
    malformedSeen: 0,
  };
  sources.push(source);
  const labels = source.labels;
  const measured: Carrier = {
    name: carrier.name,
    limits: carrier.limits,
    ...(carrier.receiptRules && { receiptRules: carrier.receiptRules }),
    start: (onReceipts) => carrier.start(onReceipts),
    stop: () => carrier.stop(),
    async submit(given: readonly CarrierPart[], options?: SubmitOptions): Promise<SubmitResult[]> {
      const end = latency.startTimer(labels);
      source.inFlight += given.length;
      try {
        const results = await carrier.submit(given, options);
        let accepted = 0;
        let heldBack = 0;
        for (const result of results) {
          if (result.ok) accepted++;
          else if (result.heldBack) heldBack++;
        }
        parts.inc({ ...labels, result: "accepted" }, accepted);
        // Parts held back (their recipient sent STOP) were not offered to the carrier.
        parts.inc({ ...labels, result: "refused" }, results.length - accepted - heldBack);
        return results;
      } catch (error) {
        parts.inc({ ...labels, result: "error" }, given.length);
        throw error;
      } finally {
        source.inFlight -= given.length;
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

/**
 * `sms_carrier_failovers_total{from,to}`: messages a carrier answered that their route meant for
 * another one first (it was down, its circuit open, or it refused them for a fault of its own).
 * Every pair of the plan's carriers starts at 0, so `increase()` sees the first failover.
 */
export function failoverCounter(
  registry: Registry,
  carriers: readonly string[],
): (from: string, to: string, messages: number) => void {
  const counter = new Counter({
    name: "sms_carrier_failovers_total",
    help: "Messages a carrier took that their route meant for another carrier first (from: that carrier, to: the one that took them)",
    labelNames: ["from", "to"],
    registers: [registry],
  });
  for (const from of carriers)
    for (const to of carriers) if (from !== to) counter.inc({ from, to }, 0);
  return (from, to, messages) => counter.inc({ from, to }, messages);
}
