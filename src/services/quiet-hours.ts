/**
 * Quiet hours at intake (docs/design.md "Message reads, client references, scheduled sends and
 * cancel"): a message due in the account's quiet hours in its recipient's time zones is held until
 * they end. OTP senders and `ignoreQuietHours` are never held. Decided once, when the message is
 * accepted, for the time it is due (its sendAt, else now); its ttl counts from the hold's end.
 */
import { deliveryClass } from "../domain/delivery-priority.ts";
import { holdUntil } from "../domain/quiet-hours.ts";
import { zonesOf } from "../quiet-hours/zones.ts";
import type { AccountView } from "./account-directory.ts";

export async function quietHoursHold(
  account: Pick<AccountView, "quietHours" | "otpSenders">,
  message: { to: string; from: string },
  due: Date,
  ignoreQuietHours: boolean,
): Promise<Date | undefined> {
  const hours = account.quietHours;
  if (!hours || ignoreQuietHours) return undefined;
  if (deliveryClass(message.from, account.otpSenders, false) === "otp") return undefined;
  return holdUntil(due, await zonesOf(message.to), hours);
}
