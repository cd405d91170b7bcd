import type { QuietHours } from "../../gen/sms/v1/money_pb.ts";
import { quietHoursErrors } from "../domain/quiet-hours.ts";
import { invalidArgument } from "../errors/api-errors.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc } from "../store/documents.ts";
import { type AccountDirectory, noSuchAccount } from "./account-directory.ts";

/**
 * AccountService.UpdateQuietHours (docs/design.md "Message reads, client references, scheduled
 * sends and cancel"): sets or clears the account's quiet hours. The one check of the times is
 * domain/quiet-hours.ts, named here by proto path; REST maps the paths to `start` and `end`.
 */
export async function changeQuietHours(
  store: Store,
  directory: AccountDirectory,
  apiKey: string,
  hours: QuietHours | undefined,
  options: { maxTimeMS?: number; signal?: AbortSignal } = {},
): Promise<AccountDoc> {
  if (hours) {
    const errors = quietHoursErrors(hours);
    if (Object.keys(errors).length > 0) {
      throw invalidArgument(
        Object.fromEntries(Object.entries(errors).map(([k, v]) => [`quiet_hours.${k}`, v])),
      );
    }
  }
  const doc = await store.accounts.findOneAndUpdate(
    { _id: apiKey },
    hours
      ? { $set: { quietHours: { start: hours.start, end: hours.end } } }
      : { $unset: { quietHours: "" } },
    { ...options, returnDocument: "after" },
  );
  if (!doc) throw noSuchAccount();
  // This instance's next send sees it at once; others within the directory's cache time.
  directory.forget(apiKey);
  return doc;
}
