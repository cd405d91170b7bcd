import type { CallOptions } from "@connectrpc/connect";
import type { FastifyInstance, FastifyReply } from "fastify";
import { type OptOut, OptOutSource } from "../../gen/sms/v1/types_pb.ts";
import type { AccountView } from "../services/account-directory.ts";
import { type Dashboard, type FieldErrorList, fieldText, serviceErrors } from "./page-kit.ts";
import { sessionCall } from "./session.ts";
import { optOutSourceText, timeText } from "./wording.ts";

// The account's opt-out list, through OptOutService (design "Two-way messaging": "Managing"):
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

  app.post(
    "/opt-outs",
    { preValidation: app.csrfProtection },
    dashboard.signedIn(async (request, reply, account) => {
      const number = fieldText((request.body as Record<string, unknown> | undefined)?.number);
      const call = sessionCall(request, account);
      let added: string;
      try {
        const { optOut } = await optOuts.createOptOut({ number }, call);
        added = optOut?.number ?? number;
      } catch (error) {
        const { status, errors } = serviceErrors(error, reply);
        return listPage(reply.code(status), account, call, "", {
          number,
          errors,
          notices: { added: "", removed: "" },
        });
      }
      return reply.redirect(`/dashboard/opt-outs?added=${encodeURIComponent(added)}`, 303);
    }),
  );

  app.post(
    "/opt-outs/:number/delete",
    { preValidation: app.csrfProtection },
    dashboard.signedIn(async (request, reply, account) => {
      const { number } = request.params as { number: string };
      const call = sessionCall(request, account);
      let removed: string;
      try {
        const { optOut } = await optOuts.deleteOptOut({ number }, call);
        removed = optOut?.number ?? number;
      } catch (error) {
        const { status, errors } = serviceErrors(error, reply);
        return listPage(reply.code(status), account, call, "", {
          number: "",
          errors,
          notices: { added: "", removed: "" },
        });
      }
      return reply.redirect(`/dashboard/opt-outs?removed=${encodeURIComponent(removed)}`, 303);
    }),
  );
}
