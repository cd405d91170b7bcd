import { create } from "@bufbuild/protobuf";
import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  type ApiKey,
  ApiKeySchema,
  ApiKeyScope,
  type ApiKeyService,
} from "../../gen/sms/v1/api_keys_pb.ts";
import {
  type ApiKeyDoc,
  apiKeysCollection,
  createApiKey,
  KEY_NAME_MAX_CHARS,
  type KeyRefusal,
  listApiKeys,
  revokeApiKey,
} from "../accounts/api-keys.ts";
import type { Scope } from "../accounts/scopes.ts";
import { rotateWebhookSecret } from "../accounts/webhook-secrets.ts";
import {
  cannotBeEmpty,
  type FieldMessages,
  fieldErrors,
  invalidArgument,
  notFound,
} from "../errors/api-errors.ts";
import type { Store } from "../store/database.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateAccount } from "./authentication.ts";

// The account's own keys and webhook secret (docs/design.md "Accounts, API keys and the operator
// console"); AdminService does the same for any account through the same functions.

export interface ApiKeyDeps {
  store: Store;
  directory: AccountDirectory;
}

const SCOPE_OF: Record<number, Scope> = {
  [ApiKeyScope.UNSPECIFIED]: "full",
  [ApiKeyScope.FULL]: "full",
  [ApiKeyScope.SEND]: "send",
  [ApiKeyScope.READ]: "read",
};

export const SCOPE_VALUES: Record<Scope, ApiKeyScope> = {
  full: ApiKeyScope.FULL,
  send: ApiKeyScope.SEND,
  read: ApiKeyScope.READ,
};

/** Keys stop working at most this far ahead: a date further is more likely a mistake. */
const MAX_EXPIRY_MS = 10 * 366 * 24 * 3600_000;

export function apiKeyMessage(doc: ApiKeyDoc): ApiKey {
  return create(ApiKeySchema, {
    apiKey: doc._id,
    name: doc.name,
    scope: SCOPE_VALUES[doc.scope],
    createTime: timestampFromDate(doc.createdAt),
    ...(doc.lastUsedAt && { lastUseTime: timestampFromDate(doc.lastUsedAt) }),
    ...(doc.expireAt && { expireTime: timestampFromDate(doc.expireAt) }),
  });
}

/** A new key's terms, checked: every field's problem at once. */
export function newKeyTerms(
  req: { name: string; scope: ApiKeyScope; expireTime?: Timestamp | undefined },
  now: Date,
): { name: string; scope: Scope; expireAt?: Date } {
  const errors: FieldMessages = {};
  const name = req.name.trim();
  if (name === "") errors.name = cannotBeEmpty("name");
  else if ([...req.name].length > KEY_NAME_MAX_CHARS) {
    errors.name = `name must be at most ${KEY_NAME_MAX_CHARS} characters`;
  }
  const scope = SCOPE_OF[req.scope];
  if (!scope) errors.scope = "scope must be one of full, send, read";
  let expireAt: Date | undefined;
  if (req.expireTime) {
    expireAt = timestampDate(req.expireTime);
    if (!(expireAt.getTime() > now.getTime())) {
      errors.expire_time = "expireTime must be in the future";
    } else if (expireAt.getTime() - now.getTime() > MAX_EXPIRY_MS) {
      errors.expire_time = "expireTime must be at most 10 years ahead";
    }
  }
  if (Object.keys(errors).length > 0) throw invalidArgument(errors);
  return { name, scope: scope as Scope, ...(expireAt && { expireAt }) };
}

/** The refusals of the key functions, as the design's errors. */
export function keyRefused(refusal: KeyRefusal, apiKey: string): never {
  switch (refusal) {
    case "not-found":
      throw notFound("api_key", `no API key ${apiKey} on this account`, "API_KEY_NOT_FOUND", {
        type: "sms.v1.ApiKey",
        name: apiKey,
      });
    case "limit":
      throw fieldErrors(
        Code.FailedPrecondition,
        { request: "an account holds at most 20 API keys: delete one first" },
        { reason: "API_KEY_LIMIT_REACHED" },
      );
    case "last-full":
      throw fieldErrors(
        Code.FailedPrecondition,
        { api_key: "the account's last full key cannot be deleted: make another full key first" },
        { reason: "LAST_FULL_KEY" },
      );
    case "account-closed":
      throw fieldErrors(
        Code.FailedPrecondition,
        { request: "this account is closed" },
        { reason: "ACCOUNT_CLOSED" },
      );
  }
}

export function createApiKeyService(deps: ApiKeyDeps): ServiceImpl<typeof ApiKeyService> {
  const { store, directory } = deps;
  const keys = apiKeysCollection(store.db);
  return {
    async createApiKey(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const now = store.clock.now();
      const terms = newKeyTerms(req, now);
      const made = await createApiKey(store.accounts, keys, account.apiKey, terms, now);
      if (typeof made === "string") keyRefused(made, "");
      // The secret is in this answer only: no cache may keep it.
      ctx.responseHeader.set("cache-control", "no-store");
      return { apiKey: apiKeyMessage(made.key), apiSecret: made.apiSecret };
    },

    async listApiKeys(_req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const found = await listApiKeys(store.accounts, keys, account.apiKey);
      if (typeof found === "string") keyRefused(found, account.apiKey);
      return { apiKeys: found.map(apiKeyMessage) };
    },

    async deleteApiKey(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      if (req.apiKey === "") throw invalidArgument({ api_key: cannotBeEmpty("apiKey") });
      if (req.apiKey === account.key.id) {
        throw fieldErrors(
          Code.FailedPrecondition,
          { api_key: "a request cannot delete the key it is made with" },
          { reason: "OWN_KEY" },
        );
      }
      const revoked = await revokeApiKey(
        store.accounts,
        keys,
        req.apiKey,
        account.apiKey,
        store.clock.now(),
      );
      if (typeof revoked === "string") keyRefused(revoked, req.apiKey);
      directory.forget(account.apiKey);
      return { apiKey: apiKeyMessage(revoked) };
    },

    async rotateWebhookSecret(_req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const webhookSecret = await rotateWebhookSecret(
        store.accounts,
        account.apiKey,
        store.clock.now(),
      );
      if (webhookSecret === null) keyRefused("not-found", account.apiKey);
      ctx.responseHeader.set("cache-control", "no-store");
      return { webhookSecret };
    },
  };
}
