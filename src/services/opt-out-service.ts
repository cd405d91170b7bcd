import type { ServiceImpl } from "@connectrpc/connect";
import type { OptOutService } from "../../gen/sms/v1/opt_outs_pb.ts";
import {
  type ChangeCursor,
  canonicalNumber,
  findChangePage,
  findOptOut,
  findOptOutPage,
  type OptOutCursor,
  type OptOutStore,
} from "../opt-outs/list.ts";
import {
  checkOptOutNumber,
  notRemovable,
  optOutChangeResource,
  optOutNotFound,
  optOutResource,
} from "../opt-outs/resources.ts";
import type { OptOutRules } from "../opt-outs/rules.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateAccount } from "./authentication.ts";
import { deadlineOf } from "./database-deadlines.ts";
import { cursorOf, MESSAGE_PAGES, paged, pageSize, pageToken } from "./page-tokens.ts";

export interface OptOutServiceDeps {
  optOuts: OptOutStore;
  rules: OptOutRules;
  directory: AccountDirectory;
  timeouts?: { requestMs: number };
}

/** The account's own opt-out list (docs/design.md "Two-way messaging": "Managing"). */
export function createOptOutService(deps: OptOutServiceDeps): ServiceImpl<typeof OptOutService> {
  const { optOuts, rules, directory } = deps;
  const dbOptions = (ctx: Parameters<typeof deadlineOf>[0]) =>
    deadlineOf(ctx, deps.timeouts?.requestMs ?? 5_000).options();

  return {
    async listOptOuts(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const limit = pageSize(req.pageSize, MESSAGE_PAGES);
      const scope = ["ListOptOuts", account.apiKey];
      const after = cursorOf(req.pageToken, scope, ["number", "string"]) as
        | OptOutCursor
        | undefined;
      const docs = await findOptOutPage(optOuts, account.apiKey, after, limit, dbOptions(ctx));
      const [page, nextPageToken] = paged(docs, limit, (last) =>
        pageToken(scope, [last.createTime.getTime(), last.number]),
      );
      return { optOuts: page.map(optOutResource), nextPageToken };
    },

    async getOptOut(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      checkOptOutNumber(req.number);
      const doc = await findOptOut(optOuts, account.apiKey, req.number);
      if (!doc) throw optOutNotFound(req.number);
      return { optOut: optOutResource(doc) };
    },

    async createOptOut(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      checkOptOutNumber(req.number);
      const { optOut } = await rules.add(account.apiKey, req.number, { source: "API" });
      return { optOut: optOutResource(optOut) };
    },

    async deleteOptOut(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      checkOptOutNumber(req.number);
      const removed = await rules.remove(account.apiKey, req.number, ["API"], { source: "API" });
      if (removed === undefined) throw optOutNotFound(req.number);
      if (removed === "not-removable") throw notRemovable(req.number, "account");
      return { optOut: optOutResource(removed) };
    },

    async listOptOutChanges(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      if (req.number !== "") checkOptOutNumber(req.number);
      const number = req.number === "" ? undefined : canonicalNumber(req.number);
      const limit = pageSize(req.pageSize, MESSAGE_PAGES);
      const scope = ["ListOptOutChanges", account.apiKey, number];
      const after = cursorOf(req.pageToken, scope, ["number", "string"]) as
        | ChangeCursor
        | undefined;
      const docs = await findChangePage(
        optOuts,
        account.apiKey,
        number,
        after,
        limit,
        dbOptions(ctx),
      );
      const [page, nextPageToken] = paged(docs, limit, (last) =>
        pageToken(scope, [last.at.getTime(), last._id]),
      );
      return { changes: page.map(optOutChangeResource), nextPageToken };
    },
  };
}
