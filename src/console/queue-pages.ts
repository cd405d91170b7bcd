import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyReply } from "fastify";
import {
  action,
  type Console,
  type FieldErrorList,
  field,
  type Operator,
  refusal,
} from "./console-kit.ts";

// The approval queue: sender names waiting for the operator, oldest first, with what to decide on;
// approve, or reject with a reason the account's dashboard shows for 30 days.

export function queuePages(app: FastifyInstance, console: Console): void {
  const { admin } = console.deps;

  async function queuePage(
    reply: FastifyReply,
    operator: Operator,
    pageToken: string,
    errors: FieldErrorList = {},
    status = 200,
  ) {
    const data: Record<string, unknown> = {
      title: "Approval queue",
      nav: "approvals",
      rows: [],
      next: "",
    };
    try {
      const page = await admin.listSenderNames(
        { pending: true, pageSize: 50, pageToken },
        operator.call,
      );
      data.rows = page.senderNames.map((s) => ({
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
      }));
      if (page.nextPageToken)
        data.next = new URLSearchParams({ page: page.nextPageToken }).toString();
    } catch (error) {
      const refused = refusal(error);
      return console.render(
        reply.code(refused.status),
        "approvals",
        { ...data, errors: refused.errors },
        operator,
      );
    }
    return console.render(reply.code(status), "approvals", { ...data, errors }, operator);
  }

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
