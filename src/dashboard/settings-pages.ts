import type { MessageInitShape } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyReply } from "fastify";
import type {
  InboundSettings,
  UpdateInboundSettingsRequestSchema,
} from "../../gen/sms/v1/inbound_pb.ts";
import type { AccountView } from "../services/account-directory.ts";
import { type Dashboard, type FieldErrorList, fieldText, serviceErrors } from "./page-kit.ts";
import { sessionCall } from "./session.ts";

// The account's settings: what the operator set (status URL, default sender), and what the
// account sets itself through InboundService (docs/design.md "Two-way messaging"): the inbound URL and
// the replies to STOP, START and HELP.

type SettingsUpdate = MessageInitShape<typeof UpdateInboundSettingsRequestSchema>;

/** The form's fields, named as UpdateInboundSettings' JSON names (its errors use them). */
interface InboundForm {
  inboundUrl: string;
  stopReply: string;
  startReply: string;
  helpReply: string;
}

const REPLIES = ["stopReply", "startReply", "helpReply"] as const;

const formOf = (settings: InboundSettings | undefined): InboundForm => ({
  inboundUrl: settings?.inboundUrl ?? "",
  stopReply: settings?.stopReply ?? "",
  startReply: settings?.startReply ?? "",
  helpReply: settings?.helpReply ?? "",
});

/**
 * The change a submitted form asks for. A reply the form shows is the one in force, the default
 * included: sent back unchanged it is left out, so a default is not kept as the account's own
 * text (and still follows the account's name). An emptied reply goes back to the default.
 */
export function inboundUpdate(shown: InboundForm, submitted: InboundForm): SettingsUpdate {
  const update: SettingsUpdate = {};
  if (submitted.inboundUrl !== shown.inboundUrl) update.inboundUrl = submitted.inboundUrl;
  for (const reply of REPLIES) {
    if (submitted[reply] !== shown[reply]) update[reply] = submitted[reply];
  }
  return update;
}

export function settingsPages(app: FastifyInstance, dashboard: Dashboard): void {
  const { inbound } = dashboard.deps.clients;

  const render = (
    reply: FastifyReply,
    account: AccountView,
    form: InboundForm,
    errors: FieldErrorList,
    saved: boolean,
  ) =>
    dashboard.render(
      reply,
      "settings",
      {
        title: "Settings",
        nav: "settings",
        statusUrl: account.statusUrl ?? "",
        defaultSender: account.defaultSender ?? "",
        form,
        errors,
        saved,
      },
      account,
    );

  app.get(
    "/settings",
    dashboard.signedIn(async (request, reply, account) => {
      const { settings } = await inbound.getInboundSettings({}, sessionCall(request, account));
      const saved = fieldText((request.query as Record<string, unknown>).saved) !== "";
      return render(reply, account, formOf(settings), {}, saved);
    }),
  );

  app.post(
    "/settings/inbound",
    { preValidation: app.csrfProtection },
    dashboard.signedIn(async (request, reply, account) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      // Texts as typed (spaces are the account's to choose); the URL trimmed.
      const raw = (name: keyof InboundForm) => {
        const value = body[name];
        return typeof value === "string" ? value.replace(/\r\n/g, "\n") : "";
      };
      const submitted: InboundForm = {
        inboundUrl: fieldText(body.inboundUrl),
        stopReply: raw("stopReply"),
        startReply: raw("startReply"),
        helpReply: raw("helpReply"),
      };
      const call = sessionCall(request, account);
      try {
        const { settings } = await inbound.getInboundSettings({}, call);
        const update = inboundUpdate(formOf(settings), submitted);
        if (Object.keys(update).length > 0) await inbound.updateInboundSettings(update, call);
      } catch (error) {
        const { status, errors } = serviceErrors(error, reply);
        return render(reply.code(status), account, submitted, errors, false);
      }
      return reply.redirect("/dashboard/settings?saved=1", 303);
    }),
  );
}
