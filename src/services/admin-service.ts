import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { type Account, AccountSchema, type AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { audit, auditLogCollection } from "../accounts/audit-log.ts";
import { rejectionsCollection } from "../accounts/sender-name-rejections.ts";
import { assignedNumberForm } from "../domain/assigned-numbers.ts";
import {
  cannotBeEmpty,
  type FieldMessages,
  fieldErrors,
  invalidArgument,
  notFound,
} from "../errors/api-errors.ts";
import { addCredit, createAccount, updateAccount } from "../store/accounts.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc } from "../store/documents.ts";
import { numbersCollection } from "../store/numbers.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { type AdminAccountDeps, adminAccounts, authorOf, STATUS_VALUES } from "./admin-accounts.ts";
import { type AdminMoneyDeps, adminMoney } from "./admin-money.ts";
import { type TwoWayAdminDeps, twoWayAdmin } from "./admin-two-way.ts";
import { authenticateOperator } from "./authentication.ts";
import { checkCallbackUrl } from "./callback-urls.ts";
import { senderNameMessage } from "./sender-name-service.ts";

export interface AdminDeps extends TwoWayAdminDeps, AdminAccountDeps, Pick<AdminMoneyDeps, "risk"> {
  store: Store;
  directory: AccountDirectory;
  adminToken: string;
  sharedSender: string;
}

function accountMessage(doc: AccountDoc): Account {
  return create(AccountSchema, {
    apiKey: doc._id,
    name: doc.name,
    creditMicros: BigInt(doc.creditMicros),
    statusUrl: doc.statusUrl ?? "",
    defaultSender: doc.defaultSender ?? "",
    createTime: timestampFromDate(doc.createdAt),
    inboundUrl: doc.inboundUrl ?? "",
    status: STATUS_VALUES[doc.status ?? "active"],
    statusReason: doc.statusReason ?? "",
  });
}

/** Amounts up to 10^9 units: far from the doubles' integer limit (2^53 micro-units). */
const MAX_MICROS = 10n ** 15n;

function toMicros(field: string, amount: bigint): number {
  if (amount > MAX_MICROS || amount < -MAX_MICROS) {
    throw invalidArgument({ [field]: `${field} must be between -${MAX_MICROS} and ${MAX_MICROS}` });
  }
  return Number(amount);
}

const accountNotFound = (apiKey: string) =>
  notFound("api_key", `no account with apiKey ${apiKey}`, "ACCOUNT_NOT_FOUND", {
    type: "sms.admin.v1.Account",
    name: apiKey,
  });

const senderNameNotFound = (message: string, name: string) =>
  notFound("name", message, "SENDER_NAME_NOT_FOUND", { type: "sms.v1.SenderName", name });

export function createAdminService(deps: AdminDeps): ServiceImpl<typeof AdminService> {
  const { store, directory } = deps;

  const found = (doc: AccountDoc | null, apiKey: string): AccountDoc => {
    if (!doc) throw accountNotFound(apiKey);
    directory.forget(apiKey);
    return doc;
  };

  async function checkSender(apiKey: string, sender: string): Promise<void> {
    if (!sender || sender === deps.sharedSender) return;
    const [approved, account, owned] = await Promise.all([
      store.senderNames.countDocuments(
        { accountId: apiKey, name: sender, pending: false },
        { limit: 1 },
      ),
      store.accounts.countDocuments({ _id: apiKey }, { limit: 1 }),
      numbersCollection(store.db).countDocuments(
        { _id: assignedNumberForm(sender) ?? sender, accountId: apiKey },
        { limit: 1 },
      ),
    ]);
    // An unknown account is the first thing wrong, whatever the name.
    if (!account) throw accountNotFound(apiKey);
    if (!approved && !owned) {
      throw invalidArgument({
        sender_name: `${sender} is neither the shared sender ${deps.sharedSender}, an approved sender name of the account nor a number assigned to it`,
      });
    }
  }

  const auditLog = auditLogCollection(store.db);
  /** Every operator change, kept with its author (docs/design.md "Accounts, API keys and the operator console"). */
  const record = (ctx: HandlerContext, action: string, accountId: string, detail: string) =>
    audit(auditLog, { at: store.clock.now(), action, accountId, detail, author: authorOf(ctx) });

  return {
    ...twoWayAdmin(deps, { message: accountMessage, found }),
    ...adminMoney(deps),
    ...adminAccounts(deps, { message: accountMessage, found }),

    async createAccount(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const errors: FieldMessages = {};
      if (req.name.trim() === "") errors.name = cannotBeEmpty("name");
      // Keys are proto field paths.
      if (req.creditMicros !== undefined && req.creditMicros < 0n) {
        errors.credit_micros = "creditMicros must be >= 0";
      }
      const urlError = req.statusUrl ? checkCallbackUrl("statusUrl", req.statusUrl) : undefined;
      if (urlError) errors.status_url = urlError;
      if (req.defaultSender && req.defaultSender !== deps.sharedSender) {
        errors.default_sender = `a new account has no approved sender names yet: use ${deps.sharedSender} or approve the name first`;
      }
      if (Object.keys(errors).length > 0) throw invalidArgument(errors);
      const { account, apiSecret } = await createAccount(store.accounts, {
        name: req.name,
        creditMicros: toMicros("credit_micros", req.creditMicros ?? 0n),
        ...(req.statusUrl && { statusUrl: req.statusUrl }),
        ...(req.defaultSender && { defaultSender: req.defaultSender }),
      });
      await record(ctx, "account.create", account._id, account.name);
      return { account: accountMessage(account), apiSecret, webhookSecret: account.webhookSecret };
    },

    async getAccount(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const doc = await store.accounts.findOne({ _id: req.apiKey });
      return { account: accountMessage(found(doc, req.apiKey)) };
    },

    async addCredit(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const amount = toMicros("amount_micros", req.amountMicros);
      const result = await addCredit(store, req.apiKey, amount, store.clock.now());
      if (result === "insufficient") {
        throw fieldErrors(
          Code.FailedPrecondition,
          { request: "the credit would go below zero" },
          { reason: "CREDIT_INSUFFICIENT" },
        );
      }
      const account = accountMessage(found(result, req.apiKey));
      await record(ctx, "account.add-credit", req.apiKey, `${amount} micros`);
      return { account };
    },

    async setStatusUrl(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const urlError = req.statusUrl ? checkCallbackUrl("statusUrl", req.statusUrl) : undefined;
      if (urlError) throw invalidArgument({ status_url: urlError });
      const doc = await updateAccount(store.accounts, req.apiKey, "statusUrl", req.statusUrl);
      return { account: accountMessage(found(doc, req.apiKey)) };
    },

    async setDefaultSender(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      await checkSender(req.apiKey, req.senderName);
      const doc = await updateAccount(store.accounts, req.apiKey, "defaultSender", req.senderName);
      return { account: accountMessage(found(doc, req.apiKey)) };
    },

    async approveSenderName(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const doc = await store.senderNames.findOneAndUpdate(
        { accountId: req.apiKey, name: req.name },
        { $set: { pending: false } },
        { returnDocument: "after" },
      );
      if (!doc) {
        throw senderNameNotFound(`no sender name ${req.name} on account ${req.apiKey}`, req.name);
      }
      directory.forget(req.apiKey);
      await record(ctx, "sender-name.approve", req.apiKey, req.name);
      const account = await store.accounts.findOne({ _id: req.apiKey });
      return { senderName: senderNameMessage(doc, account?.defaultSender) };
    },

    async rejectSenderName(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const reason = req.reason.trim();
      if ([...reason].length > 500) {
        throw invalidArgument({ reason: "reason must be at most 500 characters" });
      }
      const doc = await store.senderNames.findOneAndDelete({
        accountId: req.apiKey,
        name: req.name,
        pending: true,
      });
      if (!doc) {
        const approved = await store.senderNames.countDocuments(
          { accountId: req.apiKey, name: req.name },
          { limit: 1 },
        );
        if (approved) {
          throw fieldErrors(
            Code.FailedPrecondition,
            {
              request: `sender name ${req.name} is approved already: the account may delete it instead`,
            },
            { reason: "SENDER_NAME_APPROVED" },
          );
        }
        throw senderNameNotFound(
          `no pending sender name ${req.name} on account ${req.apiKey}`,
          req.name,
        );
      }
      directory.forget(req.apiKey);
      // Shown on the account's dashboard for 30 days (accounts/sender-name-rejections.ts).
      await rejectionsCollection(store.db).insertOne({
        accountId: req.apiKey,
        name: req.name,
        reason,
        at: store.clock.now(),
      });
      await record(
        ctx,
        "sender-name.reject",
        req.apiKey,
        reason ? `${req.name}: ${reason}` : req.name,
      );
      return { senderName: senderNameMessage(doc, undefined) };
    },
  };
}
