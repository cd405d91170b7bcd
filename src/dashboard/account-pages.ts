import type { FastifyInstance } from "fastify";
import { UsageGroup, type UsageRow } from "../../gen/sms/v1/money_pb.ts";
import type { SenderName } from "../../gen/sms/v1/types_pb.ts";
import { recentRejections, rejectionsCollection } from "../accounts/sender-name-rejections.ts";
import { asUnavailable } from "../services/database-deadlines.ts";
import { SENDER_NAME_PAGES } from "../services/page-tokens.ts";
import { OWNER_TYPES, PURPOSES } from "../services/sender-name-service.ts";
import { creditOf, recentStatusCounts } from "../store/account-summary.ts";
import { type Dashboard, serviceErrors } from "./page-kit.ts";
import { RecentCounts } from "./recent-counts.ts";
import { sessionCall } from "./session.ts";
import { creditText, ownerTypeName, purposeName, STATUS_MEANINGS } from "./wording.ts";

// The account's own pages: the overview (credit, the last 24 hours by status, counted at most
// every few seconds: recent-counts.ts) and its sender names (request, list, delete).

/** Each status count of the overview stops here: the overview stays fast at any volume. */
const COUNT_CAP = 1_000_000;
const DAY_MS = 24 * 60 * 60 * 1000;

interface SenderNameForm {
  name: string;
  purpose: string;
  ownerType: string;
  owner: string;
  exampleMsg: string;
}

const text = (value: unknown): string => (typeof value === "string" ? value : "");

export function accountPages(app: FastifyInstance, dashboard: Dashboard): void {
  const { clients, store, config } = dashboard.deps;

  const options = { maxTimeMS: config.requestTimeoutMs };
  const recentCounts = new RecentCounts((accountId) =>
    // Messages are stamped on the database server's clock.
    recentStatusCounts(
      store,
      accountId,
      new Date(store.clock.nowMs() - DAY_MS),
      COUNT_CAP,
      options,
    ),
  );

  app.get(
    "/overview",
    dashboard.signedIn(async (request, reply, account) => {
      // The credit is read on every view: it is one document, and a view after a send shows it.
      const days = lastDays(new Date(store.clock.nowMs()), 30);
      const call = sessionCall(request, account);
      const usageOf = (groupBy: UsageGroup[]) =>
        clients.usage.getUsage(
          { startDate: days[0] as string, endDate: dayAfter(days.at(-1) as string), groupBy },
          call,
        );
      const [credit, counts, byDay, byCountry] = await Promise.all([
        creditOf(store, account.apiKey, options),
        recentCounts.get(account.apiKey),
        usageOf([UsageGroup.DAY]),
        usageOf([UsageGroup.COUNTRY]),
      ]).catch((error: unknown) => {
        throw asUnavailable(error);
      });
      const count = (status: string) => counts.find((c) => c.status === status)?.count ?? 0;
      const delivered = count("DELIVERED");
      const final = delivered + count("DELIVERY_ERROR") + count("SEND_ERROR");
      const largest = Math.max(1, ...counts.map((c) => c.count));
      return dashboard.render(
        reply,
        "overview",
        {
          title: "Overview",
          nav: "overview",
          credit: creditText(credit ?? 0),
          total: counts.reduce((sum, c) => sum + c.count, 0),
          bars: counts.map((c) => ({
            ...c,
            meaning: STATUS_MEANINGS[c.status],
            // Bar length in percent of the chart's width, at least a sliver for a non-zero count.
            width: c.count === 0 ? 0 : Math.max(1, Math.round((c.count / largest) * 100)),
          })),
          deliveryRate: final === 0 ? undefined : ((delivered / final) * 100).toFixed(1),
          final,
          month: monthChart(days, byDay.rows),
          countries: byCountry.rows.map((row) => ({
            country: row.country ?? "",
            messages: Number(row.messages),
            parts: Number(row.parts),
            charged: creditText(row.chargedMicros - row.refundedMicros),
          })),
        },
        account,
      );
    }),
  );

  const listSenderNames = async (call: ReturnType<typeof sessionCall>) => {
    const names: SenderName[] = [];
    let pageToken = "";
    do {
      const page = await clients.senderNames.listSenderNames(
        { pageSize: SENDER_NAME_PAGES.max, pageToken },
        call,
      );
      names.push(...page.senderNames);
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    return names.map((n) => ({
      name: n.name,
      pending: n.pending,
      reliable: n.reliable,
      isDefault: n.isDefault,
      purpose: purposeName(n.purpose),
      ownerType: ownerTypeName(n.ownerType),
      owner: n.owner,
    }));
  };

  const senderNamesPage = {
    title: "Sender names",
    nav: "sender-names",
    purposes: Object.keys(PURPOSES),
    ownerTypes: Object.keys(OWNER_TYPES),
  };

  /** The operator's rejections the account is shown for 30 days (accounts/sender-name-rejections.ts). */
  const rejectionsOf = async (accountId: string) =>
    (
      await recentRejections(
        rejectionsCollection(dashboard.deps.store.db),
        accountId,
        dashboard.deps.store.clock.now(),
      )
    ).map((r) => ({ ...r, at: r.at.toISOString().replace(/\.\d{3}Z$/, "Z") }));

  app.get<{ Querystring: { requested?: string; deleted?: string } }>(
    "/sender-names",
    dashboard.signedIn(async (request, reply, account) => {
      const query = request.query as { requested?: string; deleted?: string };
      return dashboard.render(
        reply,
        "sender-names",
        {
          ...senderNamesPage,
          names: await listSenderNames(sessionCall(request, account)),
          rejections: await rejectionsOf(account.apiKey),
          form: { name: "", purpose: "", ownerType: "", owner: "", exampleMsg: "" },
          errors: {},
          requested: text(query.requested),
          deleted: text(query.deleted),
        },
        account,
      );
    }),
  );

  app.post(
    "/sender-names",
    { preValidation: app.csrfProtection },
    dashboard.signedIn(async (request, reply, account) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const form: SenderNameForm = {
        name: text(body.name),
        purpose: text(body.purpose),
        ownerType: text(body.ownerType),
        owner: text(body.owner),
        exampleMsg: text(body.exampleMsg),
      };
      const call = sessionCall(request, account);
      try {
        // An unknown purpose or owner type goes as UNSPECIFIED: the service refuses it, in its words.
        await clients.senderNames.createSenderName(
          {
            name: form.name,
            purpose: PURPOSES[form.purpose as keyof typeof PURPOSES] ?? 0,
            ownerType: OWNER_TYPES[form.ownerType as keyof typeof OWNER_TYPES] ?? 0,
            owner: form.owner,
            exampleMsg: form.exampleMsg,
          },
          call,
        );
      } catch (error) {
        const { status, errors } = serviceErrors(error, reply);
        return dashboard.render(
          reply.code(status),
          "sender-names",
          {
            ...senderNamesPage,
            names: await listSenderNames(call),
            rejections: await rejectionsOf(account.apiKey),
            form,
            errors,
            requested: "",
            deleted: "",
          },
          account,
        );
      }
      return reply.redirect(
        `/dashboard/sender-names?requested=${encodeURIComponent(form.name)}`,
        303,
      );
    }),
  );

  app.post<{ Params: { name: string } }>(
    "/sender-names/:name/delete",
    { preValidation: app.csrfProtection },
    dashboard.signedIn(async (request, reply, account) => {
      const { name } = request.params as { name: string };
      await clients.senderNames.deleteSenderName({ name }, sessionCall(request, account));
      return reply.redirect(`/dashboard/sender-names?deleted=${encodeURIComponent(name)}`, 303);
    }),
  );
}

/** The last `count` UTC days up to `today`'s, oldest first, as `YYYY-MM-DD`. */
function lastDays(today: Date, count: number): string[] {
  return Array.from({ length: count }, (_, i) =>
    new Date(today.getTime() - (count - 1 - i) * DAY_MS).toISOString().slice(0, 10),
  );
}

const dayAfter = (day: string) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);

/**
 * The overview's 30 days: messages and amount (charged less refunded) per day, each scaled to its
 * own tallest day, for two server-drawn SVG charts and their table.
 */
function monthChart(days: string[], rows: readonly UsageRow[]) {
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const points = days.map((day) => {
    const row = byDay.get(day);
    const amountMicros = row ? Number(row.chargedMicros - row.refundedMicros) : 0;
    return { day, messages: row ? Number(row.messages) : 0, amountMicros };
  });
  const mostMessages = Math.max(1, ...points.map((p) => p.messages));
  const mostAmount = Math.max(1, ...points.map((p) => p.amountMicros));
  return points.map((p) => ({
    ...p,
    amountText: creditText(p.amountMicros),
    // Column heights in percent of the chart's height.
    messagesHeight: Math.round((p.messages / mostMessages) * 100),
    amountHeight: Math.round((Math.max(0, p.amountMicros) / mostAmount) * 100),
  }));
}
