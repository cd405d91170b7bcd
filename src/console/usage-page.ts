import type { FastifyInstance } from "fastify";
import { type AccountDayCursor, listAccountDays, validDate } from "../money/usage.ts";
import { type Console, type FieldErrorList, field } from "./console-kit.ts";

// Usage per account and day (docs/design.md "Money", "Usage"): read from the rows kept per account,
// day and country as messages are charged and refunded, never from the messages, so a page costs
// its own rows whatever the traffic. A date range (UTC, `until` excluded, as GET /usage), an
// account, and pages of PAGE_SIZE account days.

export const PAGE_SIZE = 50;
const DEFAULT_DAYS = 14;
const DAY_MS = 86_400_000;

const day = (date: Date) => date.toISOString().slice(0, 10);
const units = (micros: number) => String(micros / 1_000_000);

/** The page token: where the last page ended, as base64url JSON. */
const tokenOf = (cursor: AccountDayCursor) =>
  Buffer.from(JSON.stringify([cursor.day, cursor.accountId])).toString("base64url");

function cursorOf(token: string): AccountDayCursor | undefined {
  try {
    const [d, accountId] = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (typeof d !== "string" || !validDate(d)) return undefined;
    if (typeof accountId !== "string" || accountId.length > 64) return undefined;
    return { day: d, accountId };
  } catch {
    return undefined;
  }
}

export function usagePage(app: FastifyInstance, console: Console): void {
  const { store } = console.deps;
  app.get(
    "/usage",
    console.signedIn(async (request, reply, operator) => {
      const query = request.query;
      const today = store.clock.now();
      const account = field(query, "account");
      const until = field(query, "until") || day(new Date(today.getTime() + DAY_MS));
      const since =
        field(query, "since") ||
        (validDate(until) ? day(new Date(Date.parse(until) - DEFAULT_DAYS * DAY_MS)) : "");
      const token = field(query, "page");
      const errors: FieldErrorList = {};
      if (!validDate(since)) errors.since = ["since must be a UTC date, YYYY-MM-DD"];
      if (!validDate(until)) errors.until = ["until must be a UTC date, YYYY-MM-DD"];
      else if (validDate(since) && since >= until) errors.until = ["until must be after since"];
      if (account.length > 64) errors.account = ["an API key has at most 64 characters"];
      const after = token ? cursorOf(token) : undefined;
      if (token && !after) errors.page = ["this page link is not valid: start again"];
      const data = { title: "Usage", nav: "usage", account, since, until, rows: [], next: "" };
      if (Object.keys(errors).length > 0)
        return console.render(reply.code(400), "usage", { ...data, errors }, operator);

      const page = await listAccountDays(
        store.usage,
        { ...(account && { accountId: account }), since, until },
        PAGE_SIZE,
        after,
      );
      return console.render(
        reply,
        "usage",
        {
          ...data,
          rows: page.rows.map((r) => ({
            day: r.day,
            account: r.accountId,
            messages: r.messages,
            parts: r.parts,
            charged: units(r.chargedMicros),
            refunded: units(r.refundedMicros),
          })),
          next: page.next
            ? new URLSearchParams({ since, until, account, page: tokenOf(page.next) }).toString()
            : "",
        },
        operator,
      );
    }),
  );
}
