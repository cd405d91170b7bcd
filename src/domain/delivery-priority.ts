/**
 * Priority within an account (docs/design.md "Scheduling: fair and prioritized"): OTP first, then single
 * sends, then batch messages, and no class starved.
 *
 * A message's place in its account's delivery queue is its `deliveryAt`, which a lane's claim takes
 * in ascending order: the time it was accepted minus its class's head start. An OTP accepted now
 * goes before every batch message accepted up to 10 minutes ago and every single send accepted up
 * to 8 minutes ago. The head start is also the bound on waiting: a batch message is overtaken only
 * by higher-class messages accepted less than their head start after it, so under any load it waits
 * at most that long behind them (aging), never forever. One field and one index order every class;
 * no per-class queue to balance.
 */

export type DeliveryClass = "otp" | "single" | "batch";

export const HEAD_START_MS: Readonly<Record<DeliveryClass, number>> = {
  otp: 10 * 60_000,
  single: 2 * 60_000,
  batch: 0,
};

/** The class of a message: OTP when sent from one of the account's OTP-purpose sender names. */
export function deliveryClass(
  from: string,
  otpSenders: ReadonlySet<string>,
  inBatch: boolean,
): DeliveryClass {
  if (otpSenders.has(from)) return "otp";
  return inBatch ? "batch" : "single";
}

/**
 * The place in its account's queue of work of a message of `cls` that became due at `at`: the
 * `deliveryAt` of a message accepted then, or the `notifyAt` of a notification due then (its
 * webhooks are ranked the same way). Without a class: as due.
 */
export function deliveryRank(at: Date, cls: DeliveryClass | undefined): Date {
  return cls === undefined ? at : new Date(deliveryRankMs(at.getTime(), cls));
}

/** `deliveryRank` in ms, for a caller that shares one Date among many documents. */
export function deliveryRankMs(at: number, cls: DeliveryClass): number {
  return at - HEAD_START_MS[cls];
}
