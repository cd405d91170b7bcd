import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply } from "fastify";
import { auditLogCollection, recentAudit } from "../accounts/audit-log.ts";
import {
  action,
  type Console,
  type FieldErrorList,
  field,
  loadedPage,
  nextPageQuery,
  type Operator,
} from "./console-kit.ts";

// Numbers (assign, release) and the audit log of every operator action from any door.

const iso = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, "Z");

export function operationPages(app: FastifyInstance, console: Console): void {
  const { admin, store } = console.deps;

  const numbersPage = (
    reply: FastifyReply,
    operator: Operator,
    pageToken: string,
    errors?: FieldErrorList,
    status?: number,
  ) =>
    loadedPage(
      console,
      reply,
      operator,
      "numbers",
      { title: "Numbers", nav: "numbers", rows: [], next: "" },
      async () => {
        const page = await admin.listNumbers({ pageSize: 100, pageToken }, operator.call);
        return {
          rows: page.numbers.map((n) => ({
            number: n.number,
            apiKey: n.apiKey,
            assigned: n.assignTime ? iso(timestampDate(n.assignTime)) : "",
          })),
          next: nextPageQuery(page.nextPageToken),
        };
      },
      errors,
      status,
    );

  app.get<{ Querystring: { page?: string } }>(
    "/numbers",
    console.signedIn((request, reply, operator) =>
      numbersPage(reply, operator, (request.query as { page?: string }).page ?? ""),
    ),
  );
  app.post(
    "/numbers",
    { preValidation: app.csrfProtection },
    console.signedIn((request, reply, operator) =>
      action(
        reply,
        () =>
          admin.assignNumber(
            { apiKey: field(request.body, "apiKey"), number: field(request.body, "number") },
            operator.call,
          ),
        (status, errors) => numbersPage(reply, operator, "", errors, status),
        "/numbers",
      ),
    ),
  );
  app.post(
    "/numbers/release",
    { preValidation: app.csrfProtection },
    console.signedIn((request, reply, operator) =>
      action(
        reply,
        () => admin.releaseNumber({ number: field(request.body, "number") }, operator.call),
        (status, errors) => numbersPage(reply, operator, "", errors, status),
        "/numbers",
      ),
    ),
  );

  app.get<{ Querystring: { account?: string } }>(
    "/audit",
    console.signedIn(async (request, reply, operator) => {
      const account = field(request.query, "account");
      const entries = await recentAudit(auditLogCollection(store.db), account || undefined, 200);
      return console.render(
        reply,
        "audit",
        {
          title: "Audit log",
          nav: "audit",
          account,
          rows: entries.map((e) => ({
            at: iso(e.at),
            action: e.action,
            account: e.accountId ?? "",
            detail: e.detail,
            author: [e.author.operator, e.author.door, e.author.address]
              .filter(Boolean)
              .join(" · "),
          })),
        },
        operator,
      );
    }),
  );
}
