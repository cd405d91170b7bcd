import type { FastifyInstance, FastifyReply } from "fastify";
import type { Db } from "mongodb";
import type { CarrierStatus } from "../delivery/carrier.ts";
import { isReachable } from "../store/database.ts";

// Liveness and readiness (docs/design.md, "Operations"). A load balancer or orchestrator asks two
// different questions: "is the process alive" (restart it if not) and "may it take traffic"
// (route elsewhere if not). Conflating them restarts healthy instances whose database is down.
//
// Both answer within 2 s: liveness touches nothing, readiness waits at most for one shared
// database ping with a 1.5 s limit (store/database.ts), however many checks arrive at once.

/** Why an instance is not ready, as `/health/ready` names it. */
export type Unready = "database" | "carrier" | "draining";

export interface HealthSources {
  db: Db;
  /** The carrier's name and state; undefined when this instance runs no delivery worker. */
  carrier: () => ({ name: string } & Partial<CarrierStatus>) | undefined;
  /** True from the start of shutdown on (lifecycle/draining.ts). */
  draining: () => boolean;
}

/** Readiness with its details: what the operator sees (`/health` on METRICS_PORT). */
export interface HealthReport {
  status: "ok" | "unready";
  failing?: Unready[];
  mongodb: "reachable" | "unreachable";
  /** The carrier's state and details (SMPP: the SMSC, binds, window, counters, last errors). */
  carrier?: { name: string } & Partial<CarrierStatus>;
  draining?: true;
}

/** Paths the draining hook lets through: they answer for themselves while closing. */
export const HEALTH_PATH = /^\/health(\/(live|ready))?\/?(\?|$)/;

/** Readiness now, with every detail; one shared database ping at most (store/database.ts). */
export async function healthReport(sources: HealthSources): Promise<HealthReport> {
  const mongodb = (await isReachable(sources.db)) ? "reachable" : "unreachable";
  const carrier = sources.carrier();
  const draining = sources.draining();
  const failing: Unready[] = [];
  if (mongodb === "unreachable") failing.push("database");
  // Only an SMPP carrier binds; "partly bound" still delivers, through its remaining binds.
  if (carrier?.state === "unbound") failing.push("carrier");
  if (draining) failing.push("draining");
  return {
    status: failing.length === 0 ? "ok" : "unready",
    ...(failing.length > 0 && { failing }),
    mongodb,
    ...(carrier && { carrier }),
    ...(draining && { draining: true as const }),
  };
}

/**
 * Liveness and readiness on PORT. Anyone may ask, so readiness names only what fails: the SMSC's
 * address and system id, traffic counters and bind errors are the operator's (`healthReport`,
 * served on METRICS_PORT). Returns `healthReport` bound to these sources.
 */
export function healthRoutes(
  app: FastifyInstance,
  sources: HealthSources,
): () => Promise<HealthReport> {
  const hidden = { schema: { hide: true } };
  app.get("/health/live", hidden, async () => ({ status: "ok" }));

  const ready = async (_request: unknown, reply: FastifyReply) => {
    const { status, failing } = await healthReport(sources);
    return reply.code(failing ? 503 : 200).send({ status, ...(failing && { failing }) });
  };
  app.get("/health/ready", hidden, ready);
  // The historical path: what load balancers configured before the split ask.
  app.get("/health", hidden, ready);
  return () => healthReport(sources);
}
