import { toJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AccountStatus,
  AccountSummarySchema,
  SenderNameRequestSchema,
} from "../../gen/sms/admin/v1/admin_pb.ts";
import { type ApiKey, ApiKeySchema, ApiKeyScope } from "../../gen/sms/v1/api_keys_pb.ts";
import { accountJson } from "./account-commands.ts";
import { type CommandContext, type Commands, UsageError } from "./command-context.ts";

// The operator's commands on keys, account status and the lists (docs/design.md "Accounts, API
// keys and the operator console"). Lists are printed whole: every page is read.

export const OPERATOR_USAGE = `  account list [--status active|suspended|closed] [--name-prefix P]
  account suspend|close --api-key K --reason R
  account resume --api-key K [--reason R]
  account webhook-secret --api-key K
  api-key create --api-key K --name N [--scope full|send|read] [--expire-time RFC3339]
  api-key list --api-key K
  api-key revoke --key KEY
  sender-name list [--pending] [--api-key K]
  (every change is audited with --operator NAME, default $USER)`;

const SCOPES: Record<string, ApiKeyScope> = {
  full: ApiKeyScope.FULL,
  send: ApiKeyScope.SEND,
  read: ApiKeyScope.READ,
};
const STATUSES: Record<string, AccountStatus> = {
  active: AccountStatus.ACTIVE,
  suspended: AccountStatus.SUSPENDED,
  closed: AccountStatus.CLOSED,
};

const keyJson = (key: ApiKey | undefined) =>
  key ? toJson(ApiKeySchema, key, { alwaysEmitImplicit: true }) : null;

function choice<T>(context: CommandContext, name: string, table: Record<string, T>): T | undefined {
  const value = context.values[name];
  if (value === undefined) return undefined;
  const chosen = typeof value === "string" ? table[value] : undefined;
  if (chosen === undefined) {
    throw new UsageError(`--${name} must be one of ${Object.keys(table).join(", ")}`);
  }
  return chosen;
}

function expireTime(context: CommandContext) {
  const value = context.values["expire-time"];
  if (value === undefined) return undefined;
  const time = typeof value === "string" ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(time)) throw new UsageError("--expire-time must be an RFC 3339 time");
  return timestampFromDate(new Date(time));
}

/** Every page of a list, in order. */
async function allPages<T>(
  page: (pageToken: string) => Promise<{ items: T[]; nextPageToken: string }>,
): Promise<T[]> {
  const items: T[] = [];
  let token = "";
  do {
    const answer = await page(token);
    items.push(...answer.items);
    token = answer.nextPageToken;
  } while (token !== "");
  return items;
}

export const operatorCommands: Commands = async (noun, verb, context) => {
  const { client, options, values, required } = context;
  const reason = (values.reason as string | undefined) ?? "";
  if (noun === "account") {
    switch (verb) {
      case "list": {
        const status = choice(context, "status", STATUSES) ?? AccountStatus.UNSPECIFIED;
        const namePrefix = (values["name-prefix"] as string | undefined) ?? "";
        const accounts = await allPages(async (pageToken) => {
          const answer = await client.listAccounts(
            { status, namePrefix, pageSize: 1000, pageToken },
            options,
          );
          return { items: answer.accounts, nextPageToken: answer.nextPageToken };
        });
        return {
          accounts: accounts.map((a) =>
            toJson(AccountSummarySchema, a, { alwaysEmitImplicit: true }),
          ),
        };
      }
      case "suspend":
        return accountJson(
          (await client.suspendAccount({ apiKey: required("api-key"), reason }, options)).account,
        );
      case "resume":
        return accountJson(
          (await client.resumeAccount({ apiKey: required("api-key"), reason }, options)).account,
        );
      case "close":
        return accountJson(
          (await client.closeAccount({ apiKey: required("api-key"), reason }, options)).account,
        );
      case "webhook-secret":
        return client.rotateWebhookSecret({ apiKey: required("api-key") }, options);
    }
  }
  if (noun === "api-key") {
    switch (verb) {
      case "create": {
        const expire = expireTime(context);
        const made = await client.createApiKey(
          {
            accountApiKey: required("api-key"),
            name: required("name"),
            scope: choice(context, "scope", SCOPES) ?? ApiKeyScope.FULL,
            ...(expire && { expireTime: expire }),
          },
          options,
        );
        return { apiSecret: made.apiSecret, apiKey: keyJson(made.apiKey) };
      }
      case "list": {
        const { apiKeys } = await client.listApiKeys(
          { accountApiKey: required("api-key") },
          options,
        );
        return { apiKeys: apiKeys.map(keyJson) };
      }
      case "revoke":
        return keyJson((await client.revokeApiKey({ apiKey: required("key") }, options)).apiKey);
    }
  }
  if (noun === "sender-name" && verb === "list") {
    const senderNames = await allPages(async (pageToken) => {
      const answer = await client.listSenderNames(
        {
          pending: values.pending === true,
          apiKey: (values["api-key"] as string | undefined) ?? "",
          pageSize: 1000,
          pageToken,
        },
        options,
      );
      return { items: answer.senderNames, nextPageToken: answer.nextPageToken };
    });
    return {
      senderNames: senderNames.map((s) =>
        toJson(SenderNameRequestSchema, s, { alwaysEmitImplicit: true }),
      ),
    };
  }
  return undefined;
};
