/**
 * Whether a carrier gets new work (docs/design.md "Routing, failover and prices", failover): not while it
 * has had no bound bind for `afterSeconds`, nor while its circuit is open. The circuit opens when at
 * least half of its last `circuitWindow` answered parts were refused (the SMPP adapter resubmits
 * throttling answers itself, so what reaches here as a refusal is not throttling); after
 * `circuitOpenSeconds` it is half-open: the carrier gets work again, and its next answer closes the
 * circuit (accepted) or opens it again (refused). Kept per instance: each instance sees its own
 * binds and answers.
 */
import type { Carrier } from "../carrier.ts";
import type { FailoverSettings, RouteSpec } from "./carrier-plan.ts";

export type CircuitState = "closed" | "open" | "half-open";

export class CarrierHealth {
  private unboundSince: number | undefined;
  /** The last answers, oldest first: true for a refused part. */
  private answers: boolean[] = [];
  private refusedInWindow = 0;
  private openedAt: number | undefined;

  constructor(
    readonly name: string,
    private readonly settings: FailoverSettings,
    /** The carrier's connection state now (`unbound`: no bind up). */
    private readonly state: () => string | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts answered parts into the circuit. */
  answered(accepted: number, refused: number): void {
    const circuit = this.circuit();
    if (circuit === "half-open") {
      // The trial decides.
      if (refused > 0) this.openedAt = this.now();
      else if (accepted > 0) this.openedAt = undefined;
      return;
    }
    if (circuit === "open") return;
    for (let i = 0; i < accepted + refused; i++) {
      const isRefused = i >= accepted;
      this.answers.push(isRefused);
      if (isRefused) this.refusedInWindow++;
      if (this.answers.length > this.settings.circuitWindow && this.answers.shift())
        this.refusedInWindow--;
    }
    if (
      this.answers.length >= this.settings.circuitWindow &&
      this.refusedInWindow * 2 >= this.settings.circuitWindow
    ) {
      this.openedAt = this.now();
      this.answers = [];
      this.refusedInWindow = 0;
    }
  }

  circuit(): CircuitState {
    if (this.openedAt === undefined) return "closed";
    return this.now() - this.openedAt < this.settings.circuitOpenSeconds * 1000
      ? "open"
      : "half-open";
  }

  /** Whether its binds have been down longer than failover allows (read as it is asked). */
  unboundTooLong(): boolean {
    if (this.state() !== "unbound") {
      this.unboundSince = undefined;
      return false;
    }
    this.unboundSince ??= this.now();
    return this.now() - this.unboundSince >= this.settings.afterSeconds * 1000;
  }

  healthy(): boolean {
    // Both are asked, so the unbound time starts counting at the first look.
    const unbound = this.unboundTooLong();
    return !unbound && this.circuit() !== "open";
  }
}

/**
 * Which messages a carrier's worker claims, given the carriers that get no new work: those whose
 * stored route's first carrier not in `down` is this one, and, where every carrier of the route is
 * down, those whose route starts with it (they wait for it). A filter on the stored route, so a
 * split route's own order per message holds. A message with a `carrier` is that carrier's alone,
 * down or not: one it cut off after accepting some of its parts (never split between carriers;
 * it waits for it or expires), and its SENT ones (due for expiry).
 */
export function claimFilter(
  carrier: string,
  routes: readonly RouteSpec[],
  down: ReadonlySet<string>,
  takesUnrouted: boolean,
): Record<string, unknown> {
  const longest = Math.max(1, ...routes.map((r) => r.carriers.length));
  const skipped = [...down];
  const any: Record<string, unknown>[] = [];
  if (!down.has(carrier)) {
    for (let i = 0; i < longest; i++) {
      const clause: Record<string, unknown> = { [`route.carriers.${i}`]: carrier };
      for (let j = 0; j < i; j++) clause[`route.carriers.${j}`] = { $in: skipped };
      any.push(clause);
      if (skipped.length === 0) break;
    }
  }
  const stranded = strandedRoutes(routes, down);
  if (stranded.length > 0)
    any.push({ "route.carriers.0": carrier, "route.name": { $in: stranded } });
  // A message the service wrote itself has no route: the default route's first carrier takes it.
  if (takesUnrouted) any.push({ route: { $exists: false } });
  const own = { carrier };
  if (any.length === 0) return own;
  const free = any.length === 1 ? (any[0] as Record<string, unknown>) : { $or: any };
  return { $or: [own, { ...free, carrier: { $exists: false } }] };
}

/** The routes none of whose carriers gets new work. */
export function strandedRoutes(routes: readonly RouteSpec[], down: ReadonlySet<string>): string[] {
  return routes.filter((r) => r.carriers.every((c) => down.has(c))).map((r) => r.name);
}

/** The carrier as its worker sees it, its answers counted into `health`'s circuit. */
export function healthTracked(carrier: Carrier, health: CarrierHealth): Carrier {
  return {
    name: carrier.name,
    limits: carrier.limits,
    ...(carrier.receiptRules && { receiptRules: carrier.receiptRules }),
    submit: async (parts, options) => {
      const results = await carrier.submit(parts, options);
      const accepted = results.filter((r) => r.ok).length;
      // Parts held back were never offered to the carrier: they say nothing of its health.
      const heldBack = results.filter((r) => !r.ok && r.heldBack).length;
      health.answered(accepted, results.length - accepted - heldBack);
      return results;
    },
    start: (onReceipts) => carrier.start(onReceipts),
    stop: () => carrier.stop(),
    status: () => ({
      state: "bound",
      ...carrier.status?.(),
      circuit: health.circuit(),
      takesWork: health.healthy(),
    }),
  };
}
