import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { Filter } from "mongodb";
import {
  type Account,
  AccountStatus,
  AccountSummarySchema,
  type AdminService,
  SenderNameRequestSchema,
} from "../../gen/sms/admin/v1/admin_pb.ts";
import { changeAccountStatus, type StatusChange } from "../accounts/account-status.ts";
import {
  apiKeysCollection,
  createApiKey,
  listApiKeys,
  revokeApiKey,
  revokeEveryKey,
} from "../accounts/api-keys.ts";
import { type AuditAuthor, audit, auditLogCollection } from "../accounts/audit-log.ts";
import { rotateWebhookSecret } from "../accounts/webhook-secrets.ts";
import { cannotBeEmpty, fieldErrors, invalidArgument } from "../errors/api-errors.ts";
import { CLIENT_ADDRESS } from "../rate-limits/client-address.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc, SenderNameDoc } from "../store/documents.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { apiKeyMessage, keyRefused, newKeyTerms } from "./api-key-service.ts";
import { authenticateOperator } from "./authentication.ts";
import { cursorOf, MESSAGE_PAGES, paged, pageSize, pageToken } from "./page-tokens.ts";
import { OWNER_TYPES, PURPOSES, senderNameMessage } from "./sender-name-service.ts";

// The operator's side of accounts (docs/design.md "Accounts, API keys and the operator console"):
// any account's keys and webhook secret, suspend / resume / close, and the lists. Every change is
// audited with its author: the door, the client's address and the `sms-operator` header (the
// console's signed-in operator, the CLI's --operator).

type AccountMethods =
  | "createApiKey"
  | "listApiKeys"
  | "revokeApiKey"
  | "rotateWebhookSecret"
  | "suspendAccount"
  | "resumeAccount"
  | "closeAccount"
  | "listAccounts"
  | "listSenderNames";

export interface AdminAccountDeps {
  store: Store;
  directory: AccountDirectory;
  adminToken: string;
  /** Told of every status change made here, so this instance's worker sees it at once. */
  onStatusChange?: (accountId: string, change: StatusChange) => Promise<void>;
}

export const REASON_MAX_CHARS = 500;
const OPERATOR_MAX_CHARS = 100;

export const STATUS_VALUES: Record<"active" | "suspended" | "closed", AccountStatus> = {
  active: AccountStatus.ACTIVE,
  suspended: AccountStatus.SUSPENDED,
  closed: AccountStatus.CLOSED,
};

/** Who made an operator call, for the audit log. */
export function authorOf(ctx: HandlerContext): AuditAuthor {
  // AdminService's only in-process caller is the operator's console (src/console).
  const author: AuditAuthor = {
    door: ctx.protocolName === "in-process" ? "console" : ctx.protocolName,
  };
  const address = ctx.values.get(CLIENT_ADDRESS);
  if (address) author.address = address;
  const operator = ctx.requestHeader.get("sms-operator")?.trim().slice(0, OPERATOR_MAX_CHARS);
  if (operator) author.operator = operator;
  return author;
}

function checkReason(reason: string, required: boolean): string {
  const trimmed = reason.trim();
  if (required && trimmed === "") throw invalidArgument({ reason: cannotBeEmpty("reason") });
  if ([...trimmed].length > REASON_MAX_CHARS) {
    throw invalidArgument({ reason: `reason must be at most ${REASON_MAX_CHARS} characters` });
  }
  return trimmed;
}

const accountClosed = () =>
  fieldErrors(
    Code.FailedPrecondition,
    { request: "this account is closed, which is final" },
    { reason: "ACCOUNT_CLOSED" },
  );

export function adminAccounts(
  deps: AdminAccountDeps,
  helpers: {
    message: (doc: AccountDoc) => Account;
    found: (doc: AccountDoc | null, apiKey: string) => AccountDoc;
  },
): Pick<ServiceImpl<typeof AdminService>, AccountMethods> {
  const { store, directory } = deps;
  const keys = apiKeysCollection(store.db);
  const auditLog = auditLogCollection(store.db);
  const record = (ctx: HandlerContext, action: string, accountId: string, detail: string) =>
    audit(auditLog, { at: store.clock.now(), action, accountId, detail, author: authorOf(ctx) });

  async function changeStatus(
    ctx: HandlerContext,
    apiKey: string,
    change: StatusChange,
    reason: string,
  ) {
    authenticateOperator(ctx, deps.adminToken);
    if (apiKey === "") throw invalidArgument({ api_key: cannotBeEmpty("apiKey") });
    const why = checkReason(reason, change !== "resume");
    const changed = await changeAccountStatus(store.accounts, apiKey, change, why);
    if (changed === "closed") throw accountClosed();
    const doc = helpers.found(changed === "not-found" ? null : changed, apiKey);
    // The keys are revoked after the status: a crash between leaves a closed account, whose keys
    // authentication refuses already, and the worker withdraws its messages (held-messages.ts).
    if (change === "close") await revokeEveryKey(store.accounts, keys, apiKey, store.clock.now());
    await record(ctx, `account.${change}`, apiKey, why);
    directory.forget(apiKey);
    await deps.onStatusChange?.(apiKey, change);
    return { account: helpers.message(doc) };
  }

  return {
    async createApiKey(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const now = store.clock.now();
      const terms = newKeyTerms(req, now);
      const made = await createApiKey(store.accounts, keys, req.accountApiKey, terms, now);
      if (made === "not-found") throw helpers.found(null, req.accountApiKey);
      if (typeof made === "string") keyRefused(made, "");
      await record(ctx, "api-key.create", req.accountApiKey, `${made.key._id} (${terms.scope})`);
      ctx.responseHeader.set("cache-control", "no-store");
      return { apiKey: apiKeyMessage(made.key), apiSecret: made.apiSecret };
    },

    async listApiKeys(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const found = await listApiKeys(store.accounts, keys, req.accountApiKey);
      if (found === "not-found") throw helpers.found(null, req.accountApiKey);
      return { apiKeys: found.map(apiKeyMessage) };
    },

    async revokeApiKey(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      if (req.apiKey === "") throw invalidArgument({ api_key: cannotBeEmpty("apiKey") });
      const revoked = await revokeApiKey(
        store.accounts,
        keys,
        req.apiKey,
        undefined,
        store.clock.now(),
        true,
      );
      if (typeof revoked === "string") keyRefused(revoked, req.apiKey);
      await record(ctx, "api-key.revoke", revoked.accountId, revoked._id);
      directory.forget(revoked.accountId);
      return { apiKey: apiKeyMessage(revoked) };
    },

    async rotateWebhookSecret(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const secret = await rotateWebhookSecret(store.accounts, req.apiKey, store.clock.now());
      if (secret === null) throw helpers.found(null, req.apiKey);
      await record(ctx, "webhook-secret.rotate", req.apiKey, "");
      ctx.responseHeader.set("cache-control", "no-store");
      return { webhookSecret: secret };
    },

    suspendAccount: (req, ctx) => changeStatus(ctx, req.apiKey, "suspend", req.reason),
    resumeAccount: (req, ctx) => changeStatus(ctx, req.apiKey, "resume", req.reason),
    closeAccount: (req, ctx) => changeStatus(ctx, req.apiKey, "close", req.reason),

    async listAccounts(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const limit = pageSize(req.pageSize, MESSAGE_PAGES);
      if (req.namePrefix.length > 200) {
        throw invalidArgument({ name_prefix: "namePrefix must be at most 200 characters" });
      }
      const scope = ["ListAccounts", req.namePrefix, req.status];
      const after = cursorOf(req.pageToken, scope, ["string"])?.[0] as string | undefined;
      const filter: Filter<AccountDoc> = {};
      if (after !== undefined) filter._id = { $gt: after };
      if (req.namePrefix) filter.name = { $regex: `^${escapeRegex(req.namePrefix)}` };
      if (req.status === AccountStatus.ACTIVE) filter.status = { $exists: false };
      else if (req.status === AccountStatus.SUSPENDED) filter.status = "suspended";
      else if (req.status === AccountStatus.CLOSED) filter.status = "closed";
      else if (req.status !== AccountStatus.UNSPECIFIED) {
        throw invalidArgument({ status: "status must be ACTIVE, SUSPENDED or CLOSED" });
      }
      const docs = await store.accounts
        .find(filter, {
          projection: { name: 1, status: 1, creditMicros: 1, createdAt: 1 },
          sort: { _id: 1 },
          limit: limit + 1,
        })
        .toArray();
      const [page, nextPageToken] = paged(docs, limit, (last) => pageToken(scope, [last._id]));
      const since = new Date(store.clock.now().getTime() - 24 * 3600_000);
      const accounts = await Promise.all(
        page.map(async (doc) => {
          const [last, recent] = await Promise.all([
            store.messages.findOne(
              { accountId: doc._id },
              { projection: { createdAt: 1 }, sort: { createdAt: -1, _id: -1 } },
            ),
            store.messages.countDocuments({ accountId: doc._id, createdAt: { $gte: since } }),
          ]);
          return create(AccountSummarySchema, {
            apiKey: doc._id,
            name: doc.name,
            status: STATUS_VALUES[doc.status ?? "active"],
            creditMicros: BigInt(doc.creditMicros),
            createTime: timestampFromDate(doc.createdAt),
            ...(last && { lastSendTime: timestampFromDate(last.createdAt) }),
            messagesLast24h: BigInt(recent),
          });
        }),
      );
      return { accounts, nextPageToken };
    },

    async listSenderNames(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const limit = pageSize(req.pageSize, MESSAGE_PAGES);
      const scope = ["AdminListSenderNames", req.pending, req.apiKey];
      const after = cursorOf(req.pageToken, scope, ["number", "string"]);
      const filter: Filter<SenderNameDoc> = {};
      if (req.pending) filter.pending = true;
      if (req.apiKey) filter.accountId = req.apiKey;
      if (after) {
        const at = new Date(after[0] as number);
        filter.$or = [
          { createdAt: { $gt: at } },
          { createdAt: at, name: { $gt: after[1] as string } },
        ];
      }
      const docs = await store.senderNames
        .find(filter, { sort: { createdAt: 1, name: 1 }, limit: limit + 1 })
        .toArray();
      const [page, nextPageToken] = paged(docs, limit, (last) =>
        pageToken(scope, [last.createdAt.getTime(), last.name]),
      );
      return {
        senderNames: page.map((doc) =>
          create(SenderNameRequestSchema, {
            apiKey: doc.accountId,
            senderName: senderNameMessage(doc, undefined),
            purpose: PURPOSES[doc.purpose],
            ownerType: OWNER_TYPES[doc.ownerType],
            owner: doc.owner,
            exampleMsg: doc.exampleMsg,
            createTime: timestampFromDate(doc.createdAt),
          }),
        ),
        nextPageToken,
      };
    },
  };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
