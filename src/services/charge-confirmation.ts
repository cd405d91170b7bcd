import { insufficientCredit, unavailable } from "../errors/api-errors.ts";
import { dailyLimitReached } from "../money/spend-controls.ts";
import { MICROS } from "../store/accounts.ts";
import type { DebitResult } from "../store/charges.ts";
import type { PendingCharge } from "../store/documents.ts";
import type { UsageDelta } from "../store/ledger.ts";
import type { MessagingDeps } from "./messaging-deps.ts";

/**
 * Confirms a charged write (a batch's; single sends are confirmed by the writer), or explains
 * why it was refused. Returns the credit left, in micro-units.
 */
export async function confirmCharge(
  deps: Pick<MessagingDeps, "store" | "intake" | "confirmations" | "onAccepted">,
  apiKey: string,
  charge: Pick<PendingCharge, "amountMicros"> & Partial<PendingCharge>,
  result: DebitResult,
  deliveryAt: Date,
  acceptedAt: Date,
  counts: { messages: number; parts: number },
  /** What a batch adds to usage, written with its ledger entry. */
  usage: readonly UsageDelta[] = [],
): Promise<bigint> {
  if (typeof result !== "string") {
    deps.intake?.accepted(counts.messages, counts.parts, charge.amountMicros);
  } else
    deps.intake?.rejected(
      result === "busy" ? "busy" : result === "over_daily_limit" ? "spend_limit" : "credit",
      counts.messages,
      counts.parts,
    );
  if (result === "busy") {
    throw unavailable(
      "too many requests of this account are still being stored; retry in a few seconds",
      "ACCOUNT_BUSY",
    );
  }
  if (result === "over_daily_limit") {
    // Only on this failure path: one more read, to name the limit.
    const account = await deps.store.accounts.findOne(
      { _id: apiKey },
      { projection: { "spendControls.dailySpendLimitMicros": 1 } },
    );
    throw dailyLimitReached(charge.amountMicros, account?.spendControls?.dailySpendLimitMicros);
  }
  if (result === "insufficient") {
    // Only on this failure path: one more read, so the caller learns how much is missing.
    const account = await deps.store.accounts.findOne(
      { _id: apiKey },
      { projection: { creditMicros: 1 } },
    );
    const left = account ? `; the account has ${account.creditMicros / MICROS}` : "";
    throw insufficientCredit(
      `not enough credit: this request costs ${charge.amountMicros / MICROS}${left}`,
    );
  }
  if (charge.kind === "batch") deps.confirmations.add(apiKey, charge as PendingCharge, usage);
  await deps.onAccepted?.(apiKey, deliveryAt, acceptedAt);
  return BigInt(result.creditMicros);
}
