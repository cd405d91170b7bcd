import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { type Account, AccountSchema, type AdminService } from "../../gen/sms/v1/admin_pb.ts";
import { addCredit, createAccount, MICROS, updateAccount } from "../store/accounts.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc } from "../store/documents.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateOperator } from "./authentication.ts";
import { checkCallbackUrl } from "./callback-urls.ts";
import { cannotBeEmpty, type FieldMessages, invalidArgument, notFound } from "./errors.ts";
import { senderNameMessage } from "./sender-name-service.ts";

export interface AdminDeps {
  store: Store;
  directory: AccountDirectory;
  adminToken: string;
  sharedSender: string;
}

function accountMessage(doc: AccountDoc): Account {
  return create(AccountSchema, {
    apiKey: doc._id,
    name: doc.name,
    credit: doc.creditMicros / MICROS,
    statusUrl: doc.statusUrl ?? "",
    defaultSender: doc.defaultSender ?? "",
    createdAt: timestampFromDate(doc.createdAt),
  });
}

function toMicros(field: string, amount: number): number {
  if (!Number.isFinite(amount) || Math.abs(amount) > 1e9) {
    throw invalidArgument({ [field]: `${field} must be a finite amount` });
  }
  return Math.round(amount * MICROS);
}

export function createAdminService(deps: AdminDeps): ServiceImpl<typeof AdminService> {
  const { store, directory } = deps;

  const found = (doc: AccountDoc | null, apiKey: string): AccountDoc => {
    if (!doc) throw notFound("apiKey", `no account with apiKey ${apiKey}`);
    directory.forget(apiKey);
    return doc;
  };

  async function checkSender(apiKey: string, sender: string): Promise<void> {
    if (!sender || sender === deps.sharedSender) return;
    const [approved, account] = await Promise.all([
      store.senderNames.countDocuments(
        { accountId: apiKey, name: sender, pending: false },
        { limit: 1 },
      ),
      store.accounts.countDocuments({ _id: apiKey }, { limit: 1 }),
    ]);
    // An unknown account is the first thing wrong, whatever the name.
    if (!account) throw notFound("apiKey", `no account with apiKey ${apiKey}`);
    if (!approved) {
      throw invalidArgument({
        senderName: `${sender} is neither the shared sender ${deps.sharedSender} nor an approved sender name of the account`,
      });
    }
  }

  return {
    async createAccount(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const errors: FieldMessages = {};
      if (req.name.trim() === "") errors.name = cannotBeEmpty("name");
      if (req.credit !== undefined && !(req.credit >= 0)) errors.credit = "credit must be >= 0";
      const urlError = req.statusUrl ? checkCallbackUrl("statusUrl", req.statusUrl) : undefined;
      if (urlError) errors.statusUrl = urlError;
      if (req.defaultSender && req.defaultSender !== deps.sharedSender) {
        errors.defaultSender = `a new account has no approved sender names yet: use ${deps.sharedSender} or approve the name first`;
      }
      if (Object.keys(errors).length > 0) throw invalidArgument(errors);
      const { account, apiSecret } = await createAccount(store.accounts, {
        name: req.name,
        creditMicros: toMicros("credit", req.credit ?? 0),
        ...(req.statusUrl && { statusUrl: req.statusUrl }),
        ...(req.defaultSender && { defaultSender: req.defaultSender }),
      });
      return { account: accountMessage(account), apiSecret, webhookSecret: account.webhookSecret };
    },

    async getAccount(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const doc = await store.accounts.findOne({ _id: req.apiKey });
      return { account: accountMessage(found(doc, req.apiKey)) };
    },

    async addCredit(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const result = await addCredit(store.accounts, req.apiKey, toMicros("amount", req.amount));
      if (result === "insufficient") {
        throw new ConnectError("the credit would go below zero", Code.FailedPrecondition);
      }
      return { account: accountMessage(found(result, req.apiKey)) };
    },

    async setStatusUrl(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
      const urlError = req.statusUrl ? checkCallbackUrl("statusUrl", req.statusUrl) : undefined;
      if (urlError) throw invalidArgument({ statusUrl: urlError });
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
      if (!doc) throw notFound("name", `no sender name ${req.name} on account ${req.apiKey}`);
      directory.forget(req.apiKey);
      const account = await store.accounts.findOne({ _id: req.apiKey });
      return { senderName: senderNameMessage(doc, account?.defaultSender) };
    },

    async rejectSenderName(req, ctx) {
      authenticateOperator(ctx, deps.adminToken);
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
          throw new ConnectError(
            `sender name ${req.name} is approved already: the account may delete it instead`,
            Code.FailedPrecondition,
          );
        }
        throw notFound("name", `no pending sender name ${req.name} on account ${req.apiKey}`);
      }
      directory.forget(req.apiKey);
      return { senderName: senderNameMessage(doc, undefined) };
    },
  };
}
