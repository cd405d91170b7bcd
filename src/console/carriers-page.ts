import type { FastifyInstance } from "fastify";
import {
  type CarrierStateDoc,
  carrierStatesCollection,
  recentCarrierStates,
} from "../accounts/carrier-states.ts";
import type { Console } from "./console-kit.ts";

// Every instance's carriers as each last wrote them (app.ts, every 5 s): the binds and their
// state, the circuit, the window in use and the submissions and refusals of the last 15 minutes
// (counted per minute in memory by the SMPP adapter, summed when the state is written).

type Reported = CarrierStateDoc["carriers"][number];

export interface CarrierRow {
  name: string;
  state: string;
  binds: string;
  circuit: string;
  window: string;
  submitted: string;
  refused: string;
  throttled: string;
}

const NONE = "—";
const iso = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, "Z");

/** The rows of what an instance reported: its one carrier, or each carrier of its plan. */
export function carrierRows(reported: Reported): CarrierRow[] {
  const carriers = Array.isArray(reported.carriers)
    ? (reported.carriers as Reported[])
    : [reported];
  return carriers.map(carrierRow);
}

const count = (value: unknown) => (typeof value === "number" ? String(value) : NONE);

/** A carrier's row as the page shows it; `—` for what its kind does not report (a simulator). */
export function carrierRow(carrier: Reported): CarrierRow {
  const binds = Array.isArray(carrier.binds)
    ? (carrier.binds as { bind?: number; state?: string }[])
        .map((b) => `#${b.bind ?? "?"} ${b.state ?? "unknown"}`)
        .join(", ")
    : NONE;
  const window = carrier.window as { size?: number; inUse?: number } | undefined;
  const recent = (carrier.last15Minutes ?? {}) as Record<string, unknown>;
  return {
    name: carrier.name,
    state: String(carrier.state ?? "unknown"),
    binds,
    circuit: typeof carrier.circuit === "string" ? carrier.circuit : NONE,
    window:
      typeof window?.inUse === "number" && typeof window.size === "number"
        ? `${window.inUse} / ${window.size}`
        : NONE,
    submitted: count(recent.submitted),
    refused: count(recent.refused),
    throttled: count(recent.throttled),
  };
}

export function carriersPage(app: FastifyInstance, console: Console): void {
  const { store } = console.deps;
  app.get(
    "/carriers",
    console.signedIn(async (_request, reply, operator) => {
      const states = await recentCarrierStates(
        carrierStatesCollection(store.db),
        store.clock.now(),
      );
      return console.render(
        reply,
        "carriers",
        {
          title: "Carriers",
          nav: "carriers",
          rows: states.map((s) => ({
            instance: s._id,
            at: iso(s.at),
            carriers: s.carriers.flatMap(carrierRows),
          })),
        },
        operator,
      );
    }),
  );
}
