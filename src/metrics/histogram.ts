import type { Registry } from "prom-client";

// A histogram for the hot paths (every request, every database operation): prom-client's own
// validates and hashes the labels on every observe, even on a label child, and keys its buckets
// by the bound turned into a string each time, about 0.5 µs per call, several calls per request
// (docs/benchmarks.md, figure 13). Here a label child is one map lookup a label value, with no
// key string built (a new string is hashed at every lookup: 0.5 µs of a send), and an
// observation is an array increment. It is registered in prom-client's registry, which writes it
// out in the same text as its own histograms, beside every other metric of the service.

export interface HistogramChild {
  observe(value: number): void;
}

interface Child {
  labels: Record<string, string>;
  /** Its observer, made once: asking for the same labels again returns it. */
  observer: HistogramChild;
  /** Observations per bucket (not cumulative), the last one +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A sample as prom-client's registry writes it: `le` first, then the child's (shared) labels. */
interface Sample {
  metricName: string;
  labels: { le?: number | string };
  sharedLabels: Record<string, string>;
  value: number;
}

export class LabelledHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly children: Child[] = [];
  /** The children by their label values, one map level a label, a child at the last. */
  private readonly index = new Map<string, unknown>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    if (buckets.some((bound, i) => i > 0 && bound <= (buckets[i - 1] as number))) {
      throw new Error(`${name}: buckets must increase`);
    }
    registry.registerMetric(this as never);
  }

  /** The child of these label values, one per label name, in order (the same object each time). */
  labels(...values: string[]): HistogramChild {
    if (values.length !== this.labelNames.length) {
      throw new Error(`${this.name}: expected labels ${this.labelNames.join(", ")}`);
    }
    let level = this.index;
    for (let i = 0; i < values.length - 1; i++) {
      const value = values[i] as string;
      const next = level.get(value) as Map<string, unknown> | undefined;
      if (next) level = next;
      else {
        const made = new Map<string, unknown>();
        level.set(value, made);
        level = made;
      }
    }
    const leaf = values.at(-1) ?? "";
    const known = level.get(leaf) as Child | undefined;
    if (known) return known.observer;
    const labels: Record<string, string> = {};
    this.labelNames.forEach((label, i) => {
      labels[label] = values[i] as string;
    });
    const { buckets } = this;
    const child: Child = {
      labels,
      counts: new Float64Array(buckets.length + 1),
      sum: 0,
      count: 0,
      observer: {
        observe(value) {
          if (!Number.isFinite(value)) return;
          let i = 0;
          while (i < buckets.length && value > (buckets[i] as number)) i++;
          child.counts[i] = (child.counts[i] as number) + 1;
          child.sum += value;
          child.count += 1;
        },
      },
    };
    level.set(leaf, child);
    this.children.push(child);
    return child.observer;
  }

  /** What prom-client's registry asks each metric for: the observed children, buckets cumulative. */
  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const child of this.children) {
      // As prom-client: a child appears once it has observed something.
      if (child.count === 0) continue;
      const sharedLabels = child.labels;
      let cumulative = 0;
      this.buckets.forEach((bound, i) => {
        cumulative += child.counts[i] as number;
        values.push({ metricName: bucket, labels: { le: bound }, sharedLabels, value: cumulative });
      });
      values.push(
        { metricName: bucket, labels: { le: "+Inf" }, sharedLabels, value: child.count },
        { metricName: `${this.name}_sum`, labels: {}, sharedLabels, value: child.sum },
        { metricName: `${this.name}_count`, labels: {}, sharedLabels, value: child.count },
      );
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }

  /** Forgets every observation (prom-client's `registry.resetMetrics()`); children stay valid. */
  reset(): void {
    for (const child of this.children) {
      child.counts.fill(0);
      child.sum = 0;
      child.count = 0;
    }
  }
}
