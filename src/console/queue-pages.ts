import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply } from "fastify";
import {
  action,
  type Console,
  type FieldErrorList,
  field,
  loadedPage,
  nextPageQuery,
  type Operator,
} from "./console-kit.ts";

// The approval queue: sender names waiting for the operator, oldest first, with what to decide on;
// approve, or reject with a reason the account's dashboard shows for 30 days.

export function queuePages(app: FastifyInstance, console: Console): void {
  const { admin } = console.deps;

  const queuePage = (
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
      "approvals",
      { title: "Approval queue", nav: "approvals", rows: [], next: "" },
      async () => {
        const page = await admin.listSenderNames(
          { pending: true, pageSize: 50, pageToken },
          operator.call,
        );
        return {
          rows: page.senderNames.map((s) => ({
            apiKey: s.apiKey,
            name: s.senderName?.name ?? "",
            purpose:
              s.senderName?.purpose !== undefined
                ? ["", "OTP", "NOTIFICATION", "MARKETING"][s.purpose]
                : "",
            owner: s.owner,
            exampleMsg: s.exampleMsg,
            asked: s.createTime
              ? timestampDate(s.createTime)
                  .toISOString()
                  .replace(/\.\d{3}Z$/, "Z")
              : "",
          })),
          next: nextPageQuery(page.nextPageToken),
        };
      },
      errors,
      status,
    );

  app.get<{ Querystring: { page?: string } }>(
    "/approvals",
    console.signedIn((request, reply, operator) =>
      queuePage(reply, operator, (request.query as { page?: string }).page ?? ""),
    ),
  );

  for (const verb of ["approve", "reject"] as const) {
    app.post(
      `/approvals/${verb}`,
      { preValidation: app.csrfProtection },
      console.signedIn((request, reply, operator) => {
        const target = { apiKey: field(request.body, "apiKey"), name: field(request.body, "name") };
        return action(
          reply,
          () =>
            verb === "approve"
              ? admin.approveSenderName(target, operator.call)
              : admin.rejectSenderName(
                  { ...target, reason: field(request.body, "reason") },
                  operator.call,
                ),
          (status, errors) => queuePage(reply, operator, "", errors, status),
          "/approvals",
        );
      }),
    );
  }
}
