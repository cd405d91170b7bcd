import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type QuietHours,
  QuietHoursSchema,
  type QuietHoursService,
} from "../../gen/sms/v1/quiet_hours_pb.ts";
import { quietHoursErrors } from "../domain/quiet-hours.ts";
import { invalidArgument } from "../errors/api-errors.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc } from "../store/documents.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateAccount } from "./authentication.ts";
import { deadlineOf } from "./database-deadlines.ts";

/**
 * QuietHoursService: the account's quiet hours (docs/design.md "Message reads, client references,
 * scheduled sends and cancel"). A small service of its own until AccountService (issue 41) holds
 * UpdateQuietHours beside UpdateSpendControls.
 */
export function createQuietHoursService(deps: {
  store: Store;
  directory: AccountDirectory;
  timeouts?: { requestMs: number };
}): ServiceImpl<typeof QuietHoursService> {
  const { store, directory } = deps;
  const options = (ctx: HandlerContext) =>
    deadlineOf(ctx, deps.timeouts?.requestMs ?? 5_000).options();
  const resource = (doc: Pick<AccountDoc, "quietHours"> | null) =>
    doc?.quietHours ? { quietHours: create(QuietHoursSchema, doc.quietHours) } : {};

  return {
    async updateQuietHours(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const hours: QuietHours | undefined = req.quietHours;
      if (hours) {
        const errors = quietHoursErrors(hours);
        if (Object.keys(errors).length > 0) {
          throw invalidArgument(
            Object.fromEntries(Object.entries(errors).map(([k, v]) => [`quiet_hours.${k}`, v])),
          );
        }
      }
      const doc = await store.accounts.findOneAndUpdate(
        { _id: account.apiKey },
        hours
          ? { $set: { quietHours: { start: hours.start, end: hours.end } } }
          : { $unset: { quietHours: "" } },
        { ...options(ctx), projection: { quietHours: 1 }, returnDocument: "after" },
      );
      // This instance's next send sees it at once; others within the directory's cache time.
      directory.forget(account.apiKey);
      return resource(doc);
    },

    async getQuietHours(_req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const doc = await store.accounts.findOne(
        { _id: account.apiKey },
        { ...options(ctx), projection: { quietHours: 1 } },
      );
      return resource(doc);
    },
  };
}
