import type { FastifyInstance } from "fastify";
import { type Credentials, serviceCall } from "./call-options.ts";
import { ALWAYS, credentials, errorResponses } from "./common-schemas.ts";
import { renderAccount } from "./money.ts";
import { account, quietHoursFields } from "./money-schemas.ts";
import type { ServiceClients } from "./service-clients.ts";

// PATCH /account/quiet-hours (docs/design.md "Message reads, client references, scheduled sends
// and cancel"): AccountService.UpdateQuietHours, answering the account as GET /account does. The
// times are checked once, by the service (domain/quiet-hours.ts), whose errors name `start` and
// `end` here.

interface QuietHoursBody extends Credentials {
  start?: string;
  end?: string;
  quietHours?: null;
}

export const updateQuietHoursSchema = {
  summary: "Set or clear the account's quiet hours",
  description:
    "JSON or form body with apiKey, apiSecret, and start and end (HH:MM, different), or quietHours: null (or neither start nor end) to clear them. A message due within them, in every time zone of its recipient's number (libphonenumber's data; the country's zones when the number's are not known; never held without a country), is held until they end, its ttl counting from then (GET /sms/{id} shows holdUntil). Messages from an OTP sender name and sends with ignoreQuietHours are never held. Decided when a message is accepted. Needs a key of scope full. Answers the account as GET /account does.",
  tags: ["account"],
  consumes: ["application/json", "application/x-www-form-urlencoded"],
  body: {
    type: "object",
    required: ["apiKey", "apiSecret"],
    properties: {
      ...credentials,
      ...quietHoursFields,
      quietHours: { type: "null", description: "null clears the quiet hours" },
    },
  },
  response: {
    200: { ...account, description: "The account after the change" },
    ...errorResponses("arrays", [...ALWAYS, 403], { 400: { end: ["end must differ from start"] } }),
  },
} as const;

export function quietHoursRoutes(app: FastifyInstance, clients: ServiceClients): void {
  app.patch<{ Body: QuietHoursBody }>(
    "/account/quiet-hours",
    { schema: updateQuietHoursSchema },
    async (request, reply) => {
      const { start, end } = request.body;
      // The body parsers take a null parameter as an absent one (docs/decisions.md), so
      // `quietHours: null` reaches here as neither start nor end: that clears them. One without
      // the other is the service's to refuse, naming the one missing.
      const clear = start === undefined && end === undefined;
      const { account: view } = await clients.account.updateQuietHours(
        clear ? {} : { quietHours: { start: start ?? "", end: end ?? "" } },
        serviceCall(request, reply, request.body),
      );
      return renderAccount(view);
    },
  );
}
