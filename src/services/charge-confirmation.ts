import { insufficientCredit, unavailable } from "../errors/api-errors.ts";
import { MICROS } from "../store/accounts.ts";
import type { DebitResult } from "../store/charges.ts";
import type { PendingCharge } from "../store/documents.ts";
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
): Promise<bigint> {
  if (result !== "busy" && result !== "insufficient") {
    deps.intake?.accepted(counts.messages, counts.parts, charge.amountMicros);
  } else
    deps.intake?.rejected(result === "busy" ? "busy" : "credit", counts.messages, counts.parts);
  if (result === "busy") {
    throw unavailable(
      "too many requests of this account are still being stored; retry in a few seconds",
      "ACCOUNT_BUSY",
    );
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
  if (charge.kind === "batch") deps.confirmations.add(apiKey, charge as PendingCharge);
  await deps.onAccepted?.(apiKey, deliveryAt, acceptedAt);
  return BigInt(result.creditMicros);
}
