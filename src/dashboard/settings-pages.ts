import type { MessageInitShape } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyReply } from "fastify";
import type {
  InboundSettings,
  UpdateInboundSettingsRequestSchema,
} from "../../gen/sms/v1/inbound_pb.ts";
import type { AccountView as AccountMessage } from "../../gen/sms/v1/money_pb.ts";
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

/** The spend controls' form (docs/design.md "Money"): amounts in credit units; empty: none. */
interface SpendForm {
  allowedCountries: string;
  maxPricePerMessage: string;
  dailySpendLimit: string;
  spentToday: string;
}

const MICROS = 1_000_000;

const spendFormOf = (view: AccountMessage | undefined): SpendForm => {
  const controls = view?.spendControls;
  const amount = (micros: bigint | undefined) =>
    micros === undefined ? "" : String(Number(micros) / MICROS);
  return {
    allowedCountries: (controls?.allowedCountries ?? []).join(", "),
    maxPricePerMessage: amount(controls?.maxPricePerMessageMicros),
    dailySpendLimit: amount(controls?.dailySpendLimitMicros),
    spentToday: amount(controls?.spentTodayMicros ?? 0n),
  };
};

/** A typed amount: empty clears it (undefined in the request); not a number is the service's to refuse. */
function amountMicros(text: string): bigint | undefined {
  if (text === "") return undefined;
  const value = Number(text);
  // -1 is refused by the service with the field's own message.
  return Number.isFinite(value) && value >= 0 && value <= 1e9
    ? BigInt(Math.round(value * MICROS))
    : -1n;
}

export function settingsPages(app: FastifyInstance, dashboard: Dashboard): void {
  const { inbound, account: accounts } = dashboard.deps.clients;

  const render = (
    reply: FastifyReply,
    account: AccountView,
    form: InboundForm,
    errors: FieldErrorList,
    saved: boolean,
    spend: { form: SpendForm; errors: FieldErrorList; saved: boolean },
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
        spend,
      },
      account,
    );

  app.get(
    "/settings",
    dashboard.signedIn(async (request, reply, account) => {
      const call = sessionCall(request, account);
      const [{ settings }, { account: view }] = await Promise.all([
        inbound.getInboundSettings({}, call),
        accounts.getAccount({}, call),
      ]);
      const query = request.query as Record<string, unknown>;
      const saved = fieldText(query.saved);
      return render(reply, account, formOf(settings), {}, saved === "1", {
        form: spendFormOf(view),
        errors: {},
        saved: saved === "spend",
      });
    }),
  );

  app.post(
    "/settings/spend-controls",
    { preValidation: app.csrfProtection },
    dashboard.signedIn(async (request, reply, account) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const submitted: SpendForm = {
        allowedCountries: fieldText(body.allowedCountries),
        maxPricePerMessage: fieldText(body.maxPricePerMessage),
        dailySpendLimit: fieldText(body.dailySpendLimit),
        spentToday: "",
      };
      const call = sessionCall(request, account);
      try {
        const max = amountMicros(submitted.maxPricePerMessage);
        const limit = amountMicros(submitted.dailySpendLimit);
        await accounts.updateSpendControls(
          {
            spendControls: {
              allowedCountries: submitted.allowedCountries
                .split(/[\s,]+/)
                .filter((c) => c !== "")
                .map((c) => c.toUpperCase()),
              ...(max !== undefined && { maxPricePerMessageMicros: max }),
              ...(limit !== undefined && { dailySpendLimitMicros: limit }),
            },
            updateMask: [
              "allowed_countries",
              "max_price_per_message_micros",
              "daily_spend_limit_micros",
            ],
          },
          call,
        );
      } catch (error) {
        const { status, errors } = serviceErrors(error, reply);
        const [{ settings }, { account: view }] = await Promise.all([
          inbound.getInboundSettings({}, call),
          accounts.getAccount({}, call),
        ]);
        const spend = {
          form: { ...submitted, spentToday: spendFormOf(view).spentToday },
          errors,
          saved: false,
        };
        return render(reply.code(status), account, formOf(settings), {}, false, spend);
      }
      return reply.redirect("/dashboard/settings?saved=spend", 303);
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
        const { account: view } = await accounts.getAccount({}, call);
        return render(reply.code(status), account, submitted, errors, false, {
          form: spendFormOf(view),
          errors: {},
          saved: false,
        });
      }
      return reply.redirect("/dashboard/settings?saved=1", 303);
    }),
  );
}
