import type { FastifyInstance } from "fastify";
import type { Db } from "mongodb";
import type { CarrierStatus } from "../delivery/carrier.ts";
import { isReachable } from "../store/database.ts";

// Liveness and readiness (design, "Operations"). A load balancer or orchestrator asks two
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

/** Paths the draining hook lets through: they answer for themselves while closing. */
export const HEALTH_PATH = /^\/health(\/(live|ready))?\/?(\?|$)/;

export function healthRoutes(app: FastifyInstance, sources: HealthSources): void {
  const hidden = { schema: { hide: true } };
  app.get("/health/live", hidden, async () => ({ status: "ok" }));

  const ready = async (_request: unknown, reply: import("fastify").FastifyReply) => {
    const mongodb = (await isReachable(sources.db)) ? "reachable" : "unreachable";
    const carrier = sources.carrier();
    const failing: Unready[] = [];
    if (mongodb === "unreachable") failing.push("database");
    // Only an SMPP carrier binds; "partly bound" still delivers, through its remaining binds.
    if (carrier?.state === "unbound") failing.push("carrier");
    if (sources.draining()) failing.push("draining");
    return reply.code(failing.length === 0 ? 200 : 503).send({
      status: failing.length === 0 ? "ok" : "unready",
      ...(failing.length > 0 && { failing }),
      mongodb,
      ...(carrier && { carrier }),
      ...(sources.draining() && { draining: true }),
    });
  };
  app.get("/health/ready", hidden, ready);
  // The historical path: what load balancers configured before the split ask.
  app.get("/health", hidden, ready);
}
