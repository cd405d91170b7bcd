import type { CallOptions } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type OptOut, OptOutSource } from "../../gen/sms/v1/types_pb.ts";
import type { AccountView } from "../services/account-directory.ts";
import { type Dashboard, type FieldErrorList, fieldText, serviceErrors } from "./page-kit.ts";
import { sessionCall } from "./session.ts";
import { optOutSourceText, timeText } from "./wording.ts";

// The account's opt-out list, through OptOutService (docs/design.md "Two-way messaging": "Managing"):
// the numbers it may not send to, a number added by hand, and the account's own entries removed.
// A handset's STOP has no remove button: only the handset's START lifts it (the service refuses
// it all the same if a form asks).

const OPT_OUTS_PER_PAGE = 50;

const LOCKED_BECAUSE: Partial<Record<OptOutSource, string>> = {
  [OptOutSource.KEYWORD]: "only the handset's START lifts it",
  [OptOutSource.OPERATOR]: "only the operator removes it",
};

function optOutRow(optOut: OptOut) {
  return {
    number: optOut.number,
    by: optOutSourceText(optOut.source),
    keyword: optOut.keyword,
    inboundId: optOut.inboundMessageId?.toString() ?? "",
    since: timeText(optOut.createTime),
    /** Why the account cannot remove it; empty when it can. */
    locked: LOCKED_BECAUSE[optOut.source] ?? "",
  };
}

interface Notices {
  added: string;
  removed: string;
}

export function optOutPages(app: FastifyInstance, dashboard: Dashboard): void {
  const { optOuts } = dashboard.deps.clients;

  /** The list page, with `errors` of a refused form (and its status) when there are. */
  async function listPage(
    reply: FastifyReply,
    account: AccountView,
    call: CallOptions,
    pageToken: string,
    { number, errors, notices }: { number: string; errors: FieldErrorList; notices: Notices },
  ) {
    const found = await optOuts.listOptOuts({ pageSize: OPT_OUTS_PER_PAGE, pageToken }, call);
    return dashboard.render(
      reply,
      "opt-outs",
      {
        title: "Opt-outs",
        nav: "opt-outs",
        optOuts: found.optOuts.map(optOutRow),
        next: found.nextPageToken,
        number,
        errors,
        ...notices,
      },
      account,
    );
  }

  app.get(
    "/opt-outs",
    dashboard.signedIn(async (request, reply, account) => {
      const query = request.query as Record<string, unknown>;
      return listPage(reply, account, sessionCall(request, account), fieldText(query.page), {
        number: "",
        errors: {},
        notices: { added: fieldText(query.added), removed: fieldText(query.removed) },
      });
    }),
  );

  /**
   * A form that changes the list: done, back to the list with the number in the `notice`;
   * refused, the list with the service's errors (and, for the add form, the number as typed).
   */
  const change = (
    notice: keyof Notices,
    numberOf: (request: FastifyRequest) => string,
    act: (number: string, call: CallOptions) => Promise<{ optOut?: OptOut }>,
  ) =>
    dashboard.signedIn(async (request, reply, account) => {
      const number = numberOf(request);
      const call = sessionCall(request, account);
      let changed: string;
      try {
        changed = (await act(number, call)).optOut?.number ?? number;
      } catch (error) {
        const { status, errors } = serviceErrors(error, reply);
        return listPage(reply.code(status), account, call, "", {
          number: notice === "added" ? number : "",
          errors,
          notices: { added: "", removed: "" },
        });
      }
      return reply.redirect(`/dashboard/opt-outs?${notice}=${encodeURIComponent(changed)}`, 303);
    });

  app.post(
    "/opt-outs",
    { preValidation: app.csrfProtection },
    change(
      "added",
      (request) => fieldText((request.body as Record<string, unknown> | undefined)?.number),
      (number, call) => optOuts.createOptOut({ number }, call),
    ),
  );

  app.post(
    "/opt-outs/:number/delete",
    { preValidation: app.csrfProtection },
    change(
      "removed",
      (request) => (request.params as { number: string }).number,
      (number, call) => optOuts.deleteOptOut({ number }, call),
    ),
  );
}
