/**
 * The hot-path histogram (src/metrics/histogram.ts) is written out exactly as prom-client writes
 * its own histogram of the same observations, so Prometheus, promtool and the alert rules see no
 * difference.
 */
import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { LabelledHistogram } from "../../src/metrics/histogram.ts";

const BUCKETS = [0.001, 0.005, 0.01, 0.1, 1];
const OBSERVATIONS: [string, string, number][] = [
  ["/sms", "200", 0.0004],
  ["/sms", "200", 0.001], // on a bound: counted in that bucket (le is "less or equal")
  ["/sms", "200", 0.003],
  ["/sms", "400", 0.02],
  ["/sms-batch", "200", 0.7],
  ["/sms-batch", "200", 4], // past the last bound: +Inf only
];

function both() {
  const ours = new Registry();
  const theirs = new Registry();
  const labelled = new LabelledHistogram(
    "t_seconds",
    "help text",
    ["route", "code"],
    BUCKETS,
    ours,
  );
  const reference = new Histogram({
    name: "t_seconds",
    help: "help text",
    labelNames: ["route", "code"],
    buckets: BUCKETS,
    registers: [theirs],
  });
  return { ours, theirs, labelled, reference };
}

describe("the labelled histogram", () => {
  it("writes the same text as prom-client's histogram for the same observations", async () => {
    const { ours, theirs, labelled, reference } = both();
    for (const [route, code, value] of OBSERVATIONS) {
      labelled.labels(route, code).observe(value);
      reference.labels(route, code).observe(value);
    }
    const text = await ours.metrics();
    expect(text).toBe(await theirs.metrics());
    expect(text).toContain('t_seconds_bucket{le="0.001",route="/sms",code="200"} 2');
    expect(text).toContain('t_seconds_bucket{le="+Inf",route="/sms-batch",code="200"} 2');
  });

  it("shows a child only once it has observed, and keeps children valid across a reset", async () => {
    const { ours, labelled } = both();
    const child = labelled.labels("/sms", "200");
    expect(labelled.labels("/sms", "200")).toBe(child);
    expect(await ours.metrics()).not.toContain("t_seconds_count");
    child.observe(0.5);
    expect(await ours.metrics()).toContain('t_seconds_count{route="/sms",code="200"} 1');
    ours.resetMetrics();
    expect(await ours.metrics()).not.toContain("t_seconds_count");
    child.observe(0.5);
    expect(await ours.metrics()).toContain('t_seconds_sum{route="/sms",code="200"} 0.5');
  });

  it("refuses label values that do not match its label names, and a value that is not a number", async () => {
    const { ours, labelled } = both();
    expect(() => labelled.labels("/sms")).toThrow("expected labels route, code");
    labelled.labels("/sms", "200").observe(Number.NaN);
    expect(await ours.metrics()).not.toContain("t_seconds_count");
  });
});
