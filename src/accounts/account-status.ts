import type { Collection } from "mongodb";
import type { AccountDoc } from "../store/documents.ts";

// An account's status, set by the operator only (docs/design.md "Accounts, API keys and the
// operator console"): active (no field), suspended, or closed for good. Each change is one
// conditional update, so a closed account is never made active or suspended again by a change
// that raced with its close.

export type StatusChange = "suspend" | "resume" | "close";

export async function changeAccountStatus(
  accounts: Collection<AccountDoc>,
  accountId: string,
  change: StatusChange,
  reason: string,
): Promise<AccountDoc | "not-found" | "closed"> {
  const update =
    change === "resume"
      ? { $unset: { status: "" as const, statusReason: "" as const } }
      : {
          $set: {
            status: change === "close" ? ("closed" as const) : ("suspended" as const),
            statusReason: reason,
          },
        };
  const filter =
    change === "close"
      ? { _id: accountId }
      : { _id: accountId, status: { $ne: "closed" as const } };
  const changed = await accounts.findOneAndUpdate(filter, update, { returnDocument: "after" });
  if (changed) return changed;
  const exists = await accounts.countDocuments({ _id: accountId }, { limit: 1 });
  return exists ? "closed" : "not-found";
}
