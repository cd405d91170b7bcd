import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply } from "fastify";
import {
  type Account,
  AccountStatus,
  type AccountSummary,
} from "../../gen/sms/admin/v1/admin_pb.ts";
import { type ApiKey, ApiKeyScope } from "../../gen/sms/v1/api_keys_pb.ts";
import { auditLogCollection, recentAudit } from "../accounts/audit-log.ts";
import { invalidArgument } from "../errors/api-errors.ts";
import {
  action,
  type Console,
  type FieldErrorList,
  field,
  loadedPage,
  nextPageQuery,
  type Operator,
  refusal,
} from "./console-kit.ts";

// Accounts: the searchable list, one account with its keys and history, and every change an
// operator makes to it (create, credit, suspend, resume, close, keys, webhook secret).

export const STATUS_NAMES: Record<number, string> = {
  [AccountStatus.ACTIVE]: "active",
  [AccountStatus.SUSPENDED]: "suspended",
  [AccountStatus.CLOSED]: "closed",
};
const STATUS_FILTERS: Record<string, AccountStatus> = {
  "": AccountStatus.UNSPECIFIED,
  active: AccountStatus.ACTIVE,
  suspended: AccountStatus.SUSPENDED,
  closed: AccountStatus.CLOSED,
};
const SCOPES: Record<string, ApiKeyScope> = {
  full: ApiKeyScope.FULL,
  send: ApiKeyScope.SEND,
  read: ApiKeyScope.READ,
};
const SCOPE_NAMES = new Map(Object.entries(SCOPES).map(([name, value]) => [value, name]));
const API_KEY = /^[A-Za-z0-9_-]{1,64}$/;

const time = (t: { seconds: bigint; nanos: number } | undefined) =>
  t
    ? timestampDate(t as never)
        .toISOString()
        .replace(/\.\d{3}Z$/, "Z")
    : "";
const units = (micros: bigint) => Number(micros) / 1_000_000;

const summaryRow = (a: AccountSummary) => ({
  apiKey: a.apiKey,
  name: a.name,
  status: STATUS_NAMES[a.status] ?? "active",
  credit: units(a.creditMicros),
  created: time(a.createTime),
  lastSend: time(a.lastSendTime),
  last24h: Number(a.messagesLast24h),
});

const keyRow = (k: ApiKey) => ({
  apiKey: k.apiKey,
  name: k.name,
  scope: SCOPE_NAMES.get(k.scope) ?? "full",
  created: time(k.createTime),
  lastUse: time(k.lastUseTime),
  expires: time(k.expireTime),
});

interface Search {
  name?: string;
  status?: string;
  page?: string;
}

export function accountPages(app: FastifyInstance, console: Console): void {
  const { admin } = console.deps;

  async function listPage(
    reply: FastifyReply,
    operator: Operator,
    search: Search,
    errors: FieldErrorList = {},
    status = 200,
  ) {
    const filters = { name: search.name ?? "", status: search.status ?? "" };
    const data: Record<string, unknown> = {
      title: "Accounts",
      nav: "accounts",
      search: filters,
      rows: [],
      next: "",
    };
    const statusFilter = STATUS_FILTERS[filters.status];
    if (statusFilter === undefined) {
      return console.render(
        reply.code(400),
        "accounts",
        { ...data, errors: { status: ["status must be active, suspended or closed"] } },
        operator,
      );
    }
    return loadedPage(
      console,
      reply,
      operator,
      "accounts",
      data,
      async () => {
        const page = await admin.listAccounts(
          {
            namePrefix: filters.name,
            status: statusFilter,
            pageSize: 50,
            pageToken: search.page ?? "",
          },
          operator.call,
        );
        return {
          rows: page.accounts.map(summaryRow),
          next: nextPageQuery(page.nextPageToken, filters),
        };
      },
      errors,
      status,
    );
  }

  app.get<{ Querystring: Search }>(
    "/accounts",
    console.signedIn((request, reply, operator) =>
      listPage(reply, operator, request.query as Search),
    ),
  );

  app.post(
    "/accounts",
    { preValidation: app.csrfProtection },
    console.signedIn(async (request, reply, operator) => {
      const credit = Number(field(request.body, "credit") || "0");
      if (!Number.isFinite(credit)) {
        return listPage(reply, operator, {}, { credit: ["credit must be a number"] }, 400);
      }
      try {
        const created = await admin.createAccount(
          {
            name: field(request.body, "name"),
            creditMicros: BigInt(Math.round(credit * 1_000_000)),
          },
          operator.call,
        );
        // The secrets are shown here once, as the CLI prints them.
        return console.render(
          reply,
          "secret",
          {
            title: "Account created",
            nav: "accounts",
            apiKey: created.account?.apiKey,
            secrets: [
              ["API key", created.account?.apiKey ?? ""],
              ["API secret", created.apiSecret],
              ["Webhook secret", created.webhookSecret],
            ],
          },
          operator,
        );
      } catch (error) {
        const refused = refusal(error);
        return listPage(reply, operator, {}, refused.errors, refused.status);
      }
    }),
  );

  async function accountPage(
    reply: FastifyReply,
    operator: Operator,
    apiKey: string,
    errors: FieldErrorList = {},
    status = 200,
  ) {
    if (!API_KEY.test(apiKey)) {
      return console.render(
        reply.code(400),
        "error",
        { title: "Error 400", errors: { apiKey: ["not an API key"] } },
        operator,
      );
    }
    let account: Account | undefined;
    let keys: ApiKey[] = [];
    try {
      account = (await admin.getAccount({ apiKey }, operator.call)).account;
      keys = (await admin.listApiKeys({ accountApiKey: apiKey }, operator.call)).apiKeys;
    } catch (error) {
      const refused = refusal(error);
      return console.render(
        reply.code(refused.status),
        "error",
        { title: `Error ${refused.status}`, errors: refused.errors },
        operator,
      );
    }
    const history = await recentAudit(auditLogCollection(console.deps.store.db), apiKey, 50);
    return console.render(
      reply.code(status),
      "account",
      {
        title: account?.name || apiKey,
        nav: "accounts",
        errors,
        account: {
          apiKey,
          name: account?.name ?? "",
          status: STATUS_NAMES[account?.status ?? 0] ?? "active",
          statusReason: account?.statusReason ?? "",
          credit: units(account?.creditMicros ?? 0n),
          statusUrl: account?.statusUrl ?? "",
          created: time(account?.createTime),
        },
        keys: keys.map(keyRow),
        history: history.map((e) => ({
          at: e.at.toISOString().replace(/\.\d{3}Z$/, "Z"),
          action: e.action,
          detail: e.detail,
          author: [e.author.operator, e.author.door, e.author.address].filter(Boolean).join(" · "),
        })),
      },
      operator,
    );
  }

  app.get<{ Params: { apiKey: string } }>(
    "/accounts/:apiKey",
    console.signedIn((request, reply, operator) =>
      accountPage(reply, operator, (request.params as { apiKey: string }).apiKey),
    ),
  );

  /** An account's form: one AdminService call, then back to the account's page. */
  const accountAction = (
    path: string,
    call: (apiKey: string, body: unknown, operator: Operator) => Promise<unknown>,
  ) =>
    app.post<{ Params: { apiKey: string } }>(
      `/accounts/:apiKey/${path}`,
      { preValidation: app.csrfProtection },
      console.signedIn((request, reply, operator) => {
        const { apiKey } = request.params as { apiKey: string };
        return action(
          reply,
          () => call(apiKey, request.body, operator),
          (status, errors) => accountPage(reply, operator, apiKey, errors, status),
          `/accounts/${encodeURIComponent(apiKey)}`,
        );
      }),
    );

  accountAction("credit", (apiKey, body, operator) => {
    const amount = Number(field(body, "amount"));
    if (!Number.isFinite(amount) || field(body, "amount") === "") {
      throw invalidArgument({ amount: "amount must be a number, in account currency" });
    }
    return admin.addCredit(
      { apiKey, amountMicros: BigInt(Math.round(amount * 1_000_000)) },
      operator.call,
    );
  });
  accountAction("suspend", (apiKey, body, operator) =>
    admin.suspendAccount({ apiKey, reason: field(body, "reason") }, operator.call),
  );
  accountAction("resume", (apiKey, body, operator) =>
    admin.resumeAccount({ apiKey, reason: field(body, "reason") }, operator.call),
  );
  accountAction("close", (apiKey, body, operator) =>
    admin.closeAccount({ apiKey, reason: field(body, "reason") }, operator.call),
  );
  accountAction("keys/revoke", (_apiKey, body, operator) =>
    admin.revokeApiKey({ apiKey: field(body, "key") }, operator.call),
  );

  app.post<{ Params: { apiKey: string } }>(
    "/accounts/:apiKey/keys",
    { preValidation: app.csrfProtection },
    console.signedIn(async (request, reply, operator) => {
      const { apiKey } = request.params as { apiKey: string };
      const scope = SCOPES[field(request.body, "scope") || "full"];
      if (scope === undefined) {
        return accountPage(
          reply,
          operator,
          apiKey,
          { scope: ["scope must be full, send or read"] },
          400,
        );
      }
      try {
        const made = await admin.createApiKey(
          { accountApiKey: apiKey, name: field(request.body, "name"), scope },
          operator.call,
        );
        return console.render(
          reply,
          "secret",
          {
            title: "Key made",
            nav: "accounts",
            apiKey,
            secrets: [
              ["API key", made.apiKey?.apiKey ?? ""],
              ["API secret", made.apiSecret],
            ],
          },
          operator,
        );
      } catch (error) {
        const refused = refusal(error);
        return accountPage(reply, operator, apiKey, refused.errors, refused.status);
      }
    }),
  );

  app.post<{ Params: { apiKey: string } }>(
    "/accounts/:apiKey/webhook-secret",
    { preValidation: app.csrfProtection },
    console.signedIn(async (request, reply, operator) => {
      const { apiKey } = request.params as { apiKey: string };
      try {
        const { webhookSecret } = await admin.rotateWebhookSecret({ apiKey }, operator.call);
        return console.render(
          reply,
          "secret",
          {
            title: "Webhook secret rotated",
            nav: "accounts",
            apiKey,
            secrets: [["Webhook secret", webhookSecret]],
          },
          operator,
        );
      } catch (error) {
        const refused = refusal(error);
        return accountPage(reply, operator, apiKey, refused.errors, refused.status);
      }
    }),
  );
}
