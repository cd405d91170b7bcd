import type { Collection, Db } from "mongodb";
import { Gauge, type Registry } from "prom-client";
import { isReachable } from "../store/database.ts";
import { type HistogramChild, LabelledHistogram } from "./histogram.ts";

// The database: whether it answers (a ping at scrape time, the one readiness shares) and the
// latency of every operation the service runs on its collections, by collection, operation and
// outcome. Timed around the driver's own calls rather than by its command monitoring, which
// builds an event for every command and parses every reply a second time for it: measured at
// 3-5 µs of CPU per command, about 3 % of a `POST /sms` (docs/benchmarks.md, figure 13).

/** Collection methods that answer with a promise: timed from the call to its settling. */
const PROMISED = [
  "insertOne",
  "insertMany",
  "updateOne",
  "updateMany",
  "replaceOne",
  "deleteOne",
  "deleteMany",
  "bulkWrite",
  "findOne",
  "findOneAndUpdate",
  "findOneAndDelete",
  "findOneAndReplace",
  "countDocuments",
  "estimatedDocumentCount",
  "distinct",
  "createIndex",
  "createIndexes",
] as const;
/** Methods that answer with a cursor: timed from the call to the end of `toArray()`. */
const CURSORS = ["find", "aggregate"] as const;

/** Observes the seconds from `started` until `operation` settles, by outcome. */
function observeSettling<T>(
  outcomes: { ok: HistogramChild; error: HistogramChild },
  started: number,
  operation: Promise<T>,
): Promise<T> {
  return operation.then(
    (result) => {
      outcomes.ok.observe((performance.now() - started) / 1000);
      return result;
    },
    (error: unknown) => {
      outcomes.error.observe((performance.now() - started) / 1000);
      throw error;
    },
  );
}

export interface DatabaseMetrics {
  /** `db` whose collections time their operations (the same collections otherwise). */
  timed(db: Db): Db;
}

export function databaseMetrics(registry: Registry, db: Db): DatabaseMetrics {
  new Gauge({
    name: "sms_database_up",
    help: "1 when the database answered a ping within 1.5 s at the last scrape",
    registers: [registry],
    async collect() {
      this.set((await isReachable(db)) ? 1 : 0);
    },
  });
  // Observed on every operation: the cheap histogram (metrics/histogram.ts).
  const latency = new LabelledHistogram(
    "sms_database_operation_duration_seconds",
    "Operations on the service's collections by collection, operation and outcome, timed around the driver's call",
    ["collection", "operation", "outcome"],
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registry,
  );
  // The label children of a collection's operation, looked up when the collection is wrapped.
  const child = (collection: string, operation: string) => ({
    ok: latency.labels(collection, operation, "ok"),
    error: latency.labels(collection, operation, "error"),
  });
  const timedCollection = (collection: Collection): Collection => {
    // Inherits everything from the driver's collection; only the timed methods are its own.
    const timed = Object.create(collection) as Collection;
    const own = timed as unknown as Record<string, unknown>;
    const methods = collection as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const operation of PROMISED) {
      const outcomes = child(collection.collectionName, operation);
      const method = methods[operation];
      // The driver's method applied directly: no bound copy, no closure per call.
      if (method)
        own[operation] = (...args: unknown[]) => {
          const started = performance.now();
          return observeSettling(
            outcomes,
            started,
            method.apply(collection, args) as Promise<unknown>,
          );
        };
    }
    for (const operation of CURSORS) {
      const outcomes = child(collection.collectionName, operation);
      const method = methods[operation];
      if (!method) continue;
      own[operation] = (...args: unknown[]) => {
        const cursor = method.apply(collection, args) as { toArray(): Promise<unknown[]> };
        const toArray = cursor.toArray.bind(cursor);
        cursor.toArray = () => observeSettling(outcomes, performance.now(), toArray());
        return cursor;
      };
    }
    return timed;
  };
  return {
    timed(database) {
      const timed = Object.create(database) as Db;
      (timed as { collection: Db["collection"] }).collection = ((name: string, options) => {
        return timedCollection(database.collection(name, options));
      }) as Db["collection"];
      return timed;
    },
  };
}
