import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { stringify } from "csv-stringify/sync";
import type { FastifyInstance } from "fastify";
import {
  AccountStatus,
  type AccountView,
  type LedgerEntry,
  LedgerEntryKind,
  UsageGroup,
  type UsageRow,
} from "../../gen/sms/v1/money_pb.ts";
import { invalidArgument } from "../errors/api-errors.ts";
import { decodeJsonObject } from "../request-bodies/json-decoding.ts";
import { RequestParseError } from "./body-parsers.ts";
import { type Credentials, serviceCall } from "./call-options.ts";
import {
  getAccountSchema,
  getUsageSchema,
  listLedgerSchema,
  updateSpendControlsSchema,
} from "./money-schemas.ts";
import { type PageQuery, pageRequest, restPage } from "./paging.ts";
import type { ServiceClients } from "./service-clients.ts";

// GET /account, PATCH /account/spend-controls, GET /ledger and GET /usage (docs/design.md
// "Money"): amounts in credit units here, int64 micro-units on RPC.

const MICROS = 1_000_000;
const units = (micros: bigint) => Number(micros) / MICROS;
const toMicros = (value: number) => BigInt(Math.round(value * MICROS));

const STATUS: Record<AccountStatus, string> = {
  [AccountStatus.UNSPECIFIED]: "ACTIVE",
  [AccountStatus.ACTIVE]: "ACTIVE",
  [AccountStatus.SUSPENDED]: "SUSPENDED",
  [AccountStatus.CLOSED]: "CLOSED",
};

const KIND: Record<LedgerEntryKind, string> = {
  [LedgerEntryKind.UNSPECIFIED]: "CHARGE",
  [LedgerEntryKind.CHARGE]: "CHARGE",
  [LedgerEntryKind.REFUND]: "REFUND",
  [LedgerEntryKind.CREDIT]: "CREDIT",
};

export function renderAccount(account: AccountView | undefined) {
  if (!account) throw new Error("the service returned no account");
  const controls = account.spendControls;
  return {
    apiKey: account.apiKey,
    name: account.name,
    status: STATUS[account.status],
    ...(account.suspendReason !== undefined && { suspendReason: account.suspendReason }),
    credit: units(account.creditMicros),
    ...(account.statusUrl !== undefined && { statusUrl: account.statusUrl }),
    ...(account.defaultSender !== undefined && { defaultSender: account.defaultSender }),
    spendControls: {
      allowedCountries: controls?.allowedCountries ?? [],
      ...(controls?.maxPricePerMessageMicros !== undefined && {
        maxPricePerMessage: units(controls.maxPricePerMessageMicros),
      }),
      ...(controls?.dailySpendLimitMicros !== undefined && {
        dailySpendLimit: units(controls.dailySpendLimitMicros),
      }),
      spentToday: units(controls?.spentTodayMicros ?? 0n),
    },
    ...(account.quietHours && {
      quietHours: { start: account.quietHours.start, end: account.quietHours.end },
    }),
  };
}

function renderEntry(entry: LedgerEntry) {
  return {
    id: entry.id,
    time: entry.time ? timestampDate(entry.time).toISOString() : "",
    kind: KIND[entry.kind],
    amount: units(entry.amountMicros),
    ...(entry.messageIds.length > 0 && { messageIds: entry.messageIds.map(Number) }),
    ...(entry.batchId !== undefined && { batchId: Number(entry.batchId) }),
    ...(entry.note !== undefined && { note: entry.note }),
  };
}

function renderRow(row: UsageRow) {
  return {
    ...(row.day !== undefined && { day: row.day }),
    ...(row.country !== undefined && { country: row.country }),
    messages: Number(row.messages),
    parts: Number(row.parts),
    charged: units(row.chargedMicros),
    refunded: units(row.refundedMicros),
  };
}

/** The rows as CSV (RFC 4180, CRLF): a header row, then one line per row. */
export function usageCsv(rows: ReturnType<typeof renderRow>[], groups: string[]): string {
  return stringify(rows, {
    header: true,
    columns: [...groups, "messages", "parts", "charged", "refunded"],
    record_delimiter: "windows",
  });
}

const GROUPS: Record<string, UsageGroup> = { day: UsageGroup.DAY, country: UsageGroup.COUNTRY };

function dateParameter(name: "since" | "until", value: string | undefined) {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime()) || !/^\d{4}-\d{2}-\d{2}T/.test(value))
    throw invalidArgument({
      [name]: `${name} must be an RFC 3339 time, e.g. 2026-11-01T00:00:00Z`,
    });
  return timestampFromDate(date);
}

/** `pageSize`: 1 to 1000 (query parameters are strings; no coercion on this API). */
function pageSizeParameter(value: string | undefined): number {
  if (value === undefined) return 0;
  const size = /^\d{1,4}$/.test(value) ? Number(value) : 0;
  if (size < 1 || size > 1000)
    throw invalidArgument({ pageSize: "pageSize must be from 1 to 1000" });
  return size;
}

type SpendBody = Credentials & {
  allowedCountries?: string[] | null;
  maxPricePerMessage?: number | null;
  dailySpendLimit?: number | null;
};

export function moneyRoutes(app: FastifyInstance, clients: ServiceClients): void {
  app.get<{ Querystring: Credentials }>(
    "/account",
    { schema: getAccountSchema },
    async (request, reply) => {
      const { account } = await clients.account.getAccount(
        {},
        serviceCall(request, reply, request.query),
      );
      return renderAccount(account);
    },
  );

  // `null` clears a control here, so this small body is parsed keeping its nulls, in a scope of
  // its own (every other JSON body takes a null parameter as absent).
  app.register(async (scope) => {
    scope.removeContentTypeParser("application/json");
    scope.addContentTypeParser(
      "application/json",
      { parseAs: "buffer", bodyLimit: SETTINGS_BODY_LIMIT },
      (_request, body, done) => {
        const result = decodeJsonObject(body as Buffer, { keepNulls: true });
        if (result.ok) done(null, result.value);
        else done(new RequestParseError(result.message));
      },
    );
    spendControlsRoute(scope, clients);
  });

  app.get<{
    Querystring: Credentials & PageQuery & { since?: string; until?: string; pageSize?: string };
  }>("/ledger", { schema: listLedgerSchema }, async (request, reply) => {
    const { query } = request;
    const since = dateParameter("since", query.since);
    const until = dateParameter("until", query.until);
    const page = await clients.usage.listLedgerEntries(
      {
        ...(since && { since }),
        ...(until && { until }),
        pageSize: pageSizeParameter(query.pageSize),
        ...pageRequest(query),
      },
      serviceCall(request, reply, query),
    );
    return restPage("entries", page.entries.map(renderEntry), page);
  });

  app.get<{ Querystring: Credentials & { since: string; until: string; groupBy?: string } }>(
    "/usage",
    { schema: getUsageSchema },
    async (request, reply) => {
      const { query } = request;
      const names = (query.groupBy ?? "")
        .split(",")
        .map((g) => g.trim())
        .filter((g) => g !== "");
      const unknown = names.filter((g) => !(g in GROUPS));
      if (unknown.length > 0)
        throw invalidArgument({
          groupBy: `groupBy takes day and country; not ${unknown.join(", ")}`,
        });
      const groups = [...new Set(names)].sort((a, b) => (a === "day" ? -1 : b === "day" ? 1 : 0));
      const { rows } = await clients.usage.getUsage(
        {
          startDate: query.since,
          endDate: query.until,
          groupBy: groups.map((g) => GROUPS[g] as UsageGroup),
        },
        serviceCall(request, reply, query),
      );
      const rendered = rows.map(renderRow);
      const accept = request.headers.accept ?? "";
      if (/\btext\/csv\b/i.test(accept)) {
        reply.type("text/csv; charset=utf-8");
        return usageCsv(rendered, groups);
      }
      return { rows: rendered };
    },
  );
}

const SETTINGS_BODY_LIMIT = 64 * 1024;

function spendControlsRoute(app: FastifyInstance, clients: ServiceClients): void {
  app.patch<{ Body: SpendBody }>(
    "/account/spend-controls",
    { schema: updateSpendControlsSchema },
    async (request, reply) => {
      const body = request.body;
      const mask: string[] = [];
      const values: {
        allowedCountries: string[];
        maxPricePerMessageMicros?: bigint;
        dailySpendLimitMicros?: bigint;
      } = { allowedCountries: [] };
      if (body.allowedCountries !== undefined) {
        mask.push("allowed_countries");
        values.allowedCountries = body.allowedCountries ?? [];
      }
      if (body.maxPricePerMessage !== undefined) {
        mask.push("max_price_per_message_micros");
        if (body.maxPricePerMessage !== null)
          values.maxPricePerMessageMicros = toMicros(body.maxPricePerMessage);
      }
      if (body.dailySpendLimit !== undefined) {
        mask.push("daily_spend_limit_micros");
        if (body.dailySpendLimit !== null)
          values.dailySpendLimitMicros = toMicros(body.dailySpendLimit);
      }
      const { account } = await clients.account.updateSpendControls(
        { spendControls: values, updateMask: mask },
        serviceCall(request, reply, body),
      );
      return renderAccount(account);
    },
  );
}
