import type { CommandFailedEvent, CommandSucceededEvent, Db, MongoClient } from "mongodb";
import { Gauge, Histogram, type Registry } from "prom-client";
import { isReachable } from "../store/database.ts";

// The database: whether it answers (a ping at scrape time, the one readiness shares) and the
// latency of every command, from the driver's command monitoring. The client must be created
// with `monitorCommands: true` (store/database.ts connect() does when metrics are on); without
// it the histogram stays empty and nothing else changes.

/** Commands the service issues; any other name is counted as "other" (labels stay bounded). */
const KNOWN = new Set([
  "aggregate",
  "count",
  "delete",
  "distinct",
  "find",
  "findAndModify",
  "getMore",
  "insert",
  "update",
  "createIndexes",
  "ping",
  "hello",
  "killCursors",
  "endSessions",
]);

export function databaseMetrics(registry: Registry, db: Db): { stop(): void } {
  new Gauge({
    name: "sms_database_up",
    help: "1 when the database answered a ping within 1.5 s at the last scrape",
    registers: [registry],
    async collect() {
      this.set((await isReachable(db)) ? 1 : 0);
    },
  });
  const latency = new Histogram({
    name: "sms_database_command_duration_seconds",
    help: "Database commands by name and outcome, as the driver timed them",
    labelNames: ["command", "outcome"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const observe = (event: CommandSucceededEvent | CommandFailedEvent, outcome: string) => {
    const command = KNOWN.has(event.commandName) ? event.commandName : "other";
    latency.observe({ command, outcome }, event.duration / 1000);
  };
  const succeeded = (event: CommandSucceededEvent) => observe(event, "ok");
  const failed = (event: CommandFailedEvent) => observe(event, "error");
  const client: MongoClient = db.client;
  client.on("commandSucceeded", succeeded);
  client.on("commandFailed", failed);
  return {
    stop() {
      client.off("commandSucceeded", succeeded);
      client.off("commandFailed", failed);
    },
  };
}
