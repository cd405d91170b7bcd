import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type AccountView as AccountMessage,
  type AccountService,
  AccountStatus,
  AccountViewSchema,
  type LedgerEntry,
  LedgerEntryKind,
  LedgerEntrySchema,
  UsageGroup,
  type UsageService,
} from "../../gen/sms/v1/money_pb.ts";
import { type FieldMessages, invalidArgument } from "../errors/api-errors.ts";
import { findLedgerPage, type LedgerCursor } from "../money/ledger-reads.ts";
import {
  type SpendControlsChange,
  spendControlsErrors,
  updateSpendControls,
} from "../money/spend-settings.ts";
import { readUsage, type UsageGrouping, validDate } from "../money/usage.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc } from "../store/documents.ts";
import { type LedgerEntryDoc, utcDay } from "../store/ledger.ts";
import { type AccountDirectory, noSuchAccount } from "./account-directory.ts";
import { authenticateAccount } from "./authentication.ts";
import { deadlineOf } from "./database-deadlines.ts";
import { cursorOf, MESSAGE_PAGES, paged, pageSize, pageToken } from "./page-tokens.ts";
import { changeQuietHours } from "./quiet-hours-settings.ts";

// UsageService and AccountService (docs/design.md "Money: what is charged, the ledger, usage and
// spend controls"): the calling account's ledger, usage, own view, spend controls and quiet hours.

export interface MoneyServiceDeps {
  store: Store;
  directory: AccountDirectory;
  timeouts?: { requestMs: number };
}

const KIND_TO_PROTO = {
  CHARGE: LedgerEntryKind.CHARGE,
  REFUND: LedgerEntryKind.REFUND,
  CREDIT: LedgerEntryKind.CREDIT,
} as const;

export function ledgerEntryMessage(doc: LedgerEntryDoc): LedgerEntry {
  return create(LedgerEntrySchema, {
    id: doc.id,
    time: timestampFromDate(doc.time),
    kind: KIND_TO_PROTO[doc.kind],
    amountMicros: BigInt(doc.amountMicros),
    messageIds: (doc.messageIds ?? []).map(BigInt),
    ...(doc.batchId !== undefined && { batchId: BigInt(doc.batchId) }),
    ...(doc.note !== undefined && { note: doc.note }),
  });
}

/** The account as it reads itself; `now` decides which day's spend is today's. */
export function accountMessage(doc: AccountDoc, now: Date): AccountMessage {
  const controls = doc.spendControls ?? {};
  return create(AccountViewSchema, {
    apiKey: doc._id,
    name: doc.name,
    status: statusOf(doc),
    ...(doc.status && doc.statusReason && { suspendReason: doc.statusReason }),
    creditMicros: BigInt(doc.creditMicros),
    ...(doc.statusUrl && { statusUrl: doc.statusUrl }),
    ...(doc.defaultSender && { defaultSender: doc.defaultSender }),
    spendControls: {
      allowedCountries: controls.allowedCountries ?? [],
      ...(controls.maxPricePerMessageMicros !== undefined && {
        maxPricePerMessageMicros: BigInt(controls.maxPricePerMessageMicros),
      }),
      ...(controls.dailySpendLimitMicros !== undefined && {
        dailySpendLimitMicros: BigInt(controls.dailySpendLimitMicros),
      }),
      spentTodayMicros: BigInt(doc.spentByDay?.[utcDay(now)] ?? 0),
    },
    ...(doc.quietHours && {
      quietHours: { start: doc.quietHours.start, end: doc.quietHours.end },
    }),
  });
}

/** The account's status as the operator set it (accounts/account-status.ts); absent: active. */
function statusOf(doc: AccountDoc): AccountStatus {
  if (doc.status === "suspended") return AccountStatus.SUSPENDED;
  if (doc.status === "closed") return AccountStatus.CLOSED;
  return AccountStatus.ACTIVE;
}

const MAX_USAGE_DAYS = 366;

export function createUsageService(deps: MoneyServiceDeps): ServiceImpl<typeof UsageService> {
  const { store, directory } = deps;
  const dbOptions = (ctx: Parameters<typeof deadlineOf>[0]) =>
    deadlineOf(ctx, deps.timeouts?.requestMs ?? 5_000).options();
  return {
    async listLedgerEntries(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const since = req.since ? timestampDate(req.since) : undefined;
      const until = req.until ? timestampDate(req.until) : undefined;
      if (since && until && until <= since)
        throw invalidArgument({ until: "until must be after since" });
      const limit = pageSize(req.pageSize, MESSAGE_PAGES);
      const scope = ["ListLedgerEntries", account.apiKey, since?.getTime(), until?.getTime()];
      const after = cursorOf(req.pageToken, scope, ["number", "string"]) as
        | LedgerCursor
        | undefined;
      const docs = await findLedgerPage(
        store.ledger,
        account.apiKey,
        { ...(since && { since }), ...(until && { until }) },
        after,
        limit,
        dbOptions(ctx),
      );
      const [page, nextPageToken] = paged(docs, limit, (last) =>
        pageToken(scope, [last.time.getTime(), last._id]),
      );
      return { entries: page.map(ledgerEntryMessage), nextPageToken };
    },

    async getUsage(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const errors: FieldMessages = {};
      const start = validDate(req.startDate);
      const end = validDate(req.endDate);
      if (!start) errors.start_date = "since must be a UTC date YYYY-MM-DD";
      if (!end) errors.end_date = "until must be a UTC date YYYY-MM-DD";
      if (start && end) {
        const days = (Date.parse(end) - Date.parse(start)) / 86_400_000;
        if (days <= 0) errors.end_date = "until must be after since";
        else if (days > MAX_USAGE_DAYS)
          errors.end_date = `until must be at most ${MAX_USAGE_DAYS} days after since`;
      }
      const groupBy: UsageGrouping[] = [];
      for (const group of req.groupBy) {
        if (group === UsageGroup.DAY) groupBy.push("day");
        else if (group === UsageGroup.COUNTRY) groupBy.push("country");
        else errors.group_by = "groupBy takes day and country";
      }
      if (Object.keys(errors).length > 0 || !start || !end) throw invalidArgument(errors);
      const rows = await readUsage(
        store.usage,
        account.apiKey,
        start,
        end,
        groupBy,
        dbOptions(ctx),
      );
      return {
        rows: rows.map((row) => ({
          ...(row.day !== undefined && { day: row.day }),
          ...(row.country !== undefined && { country: row.country }),
          messages: BigInt(row.messages),
          parts: BigInt(row.parts),
          chargedMicros: BigInt(row.chargedMicros),
          refundedMicros: BigInt(row.refundedMicros),
        })),
      };
    },
  };
}

const MASK_PATHS = new Set([
  "allowed_countries",
  "max_price_per_message_micros",
  "daily_spend_limit_micros",
]);

/** A request's mask and values as a change (`null` for a named field left unset). */
export function spendControlsChange(
  mask: readonly string[],
  values:
    | {
        allowedCountries: string[];
        maxPricePerMessageMicros?: bigint;
        dailySpendLimitMicros?: bigint;
      }
    | undefined,
): SpendControlsChange {
  const unknown = mask.filter((path) => !MASK_PATHS.has(path.replace(/^spend_controls\./, "")));
  if (unknown.length > 0)
    throw invalidArgument({
      update_mask: `update_mask takes allowed_countries, max_price_per_message_micros and daily_spend_limit_micros; not ${unknown.join(", ")}`,
    });
  const named = new Set(mask.map((path) => path.replace(/^spend_controls\./, "")));
  const change: SpendControlsChange = {};
  if (named.has("allowed_countries")) change.allowedCountries = values?.allowedCountries ?? null;
  if (named.has("max_price_per_message_micros"))
    change.maxPricePerMessageMicros = micros(values?.maxPricePerMessageMicros);
  if (named.has("daily_spend_limit_micros"))
    change.dailySpendLimitMicros = micros(values?.dailySpendLimitMicros);
  return change;
}

function micros(value: bigint | undefined): number | null {
  if (value === undefined) return null;
  // Out of the safe range: refused by spendControlsErrors, named by its field.
  return value > BigInt(Number.MAX_SAFE_INTEGER) || value < 0n ? -1 : Number(value);
}

/** Applies a change to `apiKey`'s controls, refusing bad values by field. */
export async function changeSpendControls(
  store: Store,
  directory: AccountDirectory,
  apiKey: string,
  change: SpendControlsChange,
): Promise<AccountMessage> {
  const errors = spendControlsErrors(change);
  if (Object.keys(errors).length > 0) throw invalidArgument(errors);
  const doc = await updateSpendControls(store.accounts, apiKey, change);
  if (!doc) throw noSuchAccount();
  // This instance's sends see the new controls at once; others within the directory's ttl.
  directory.forget(apiKey);
  return accountMessage(doc, store.clock.now());
}

export function createAccountService(deps: MoneyServiceDeps): ServiceImpl<typeof AccountService> {
  const { store, directory } = deps;
  return {
    async getAccount(_req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const doc = await store.accounts.findOne(
        { _id: account.apiKey },
        deadlineOf(ctx, deps.timeouts?.requestMs ?? 5_000).options(),
      );
      if (!doc) throw noSuchAccount();
      return { account: accountMessage(doc, store.clock.now()) };
    },

    async updateSpendControls(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const change = spendControlsChange(req.updateMask, req.spendControls);
      return { account: await changeSpendControls(store, directory, account.apiKey, change) };
    },

    async updateQuietHours(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const doc = await changeQuietHours(
        store,
        directory,
        account.apiKey,
        req.quietHours,
        deadlineOf(ctx, deps.timeouts?.requestMs ?? 5_000).options(),
      );
      return { account: accountMessage(doc, store.clock.now()) };
    },
  };
}
