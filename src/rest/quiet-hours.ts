import type { FastifyInstance } from "fastify";
import type { QuietHours } from "../../gen/sms/v1/quiet_hours_pb.ts";
import { type Credentials, serviceCall } from "./call-options.ts";
import { ALWAYS, credentials, errorResponses } from "./common-schemas.ts";
import type { ServiceClients } from "./service-clients.ts";

// PATCH /account/quiet-hours (docs/design.md "Message reads, client references, scheduled sends
// and cancel"): the account's quiet hours, through QuietHoursService until AccountService (issue
// 41) holds UpdateQuietHours and GET /account answers them with the rest of the account.

interface QuietHoursBody extends Credentials {
  start?: string;
  end?: string;
  quietHours?: null;
}

const hhmm = (what: string) =>
  ({
    type: "string",
    pattern: "^([01][0-9]|2[0-3]):[0-5][0-9]$",
    description: `${what}, HH:MM in the recipient's local time`,
  }) as const;

const quietHoursObject = {
  type: "object",
  required: ["start", "end"],
  properties: { start: hhmm("When quiet hours begin"), end: hhmm("When they end") },
} as const;

export const updateQuietHoursSchema = {
  summary: "Set or clear the account's quiet hours",
  description:
    "JSON or form body with apiKey, apiSecret, and start and end (HH:MM, different), or quietHours: null (or neither start nor end) to clear them. A message due within them, in every time zone of its recipient's number (libphonenumber's data; the country's zones when the number's are not known; never held without a country), is held until they end, its ttl counting from then (GET /sms/{id} shows holdUntil). Messages from an OTP sender name and sends with ignoreQuietHours are never held. Decided when a message is accepted.",
  tags: ["account"],
  consumes: ["application/json", "application/x-www-form-urlencoded"],
  body: {
    type: "object",
    required: ["apiKey", "apiSecret"],
    properties: {
      ...credentials,
      start: hhmm("When quiet hours begin, e.g. 21:00"),
      end: hhmm("When they end, e.g. 08:00"),
      quietHours: { type: "null", description: "null clears the quiet hours" },
    },
  },
  response: {
    200: {
      description: "The account's quiet hours as now set (absent when cleared)",
      type: "object",
      required: ["apiKey"],
      properties: { apiKey: { type: "string" }, quietHours: quietHoursObject },
    },
    ...errorResponses("arrays", ALWAYS, { 400: { end: ["end must differ from start"] } }),
  },
} as const;

const rendered = (apiKey: string, hours: QuietHours | undefined) => ({
  apiKey,
  ...(hours && { quietHours: { start: hours.start, end: hours.end } }),
});

export function quietHoursRoutes(app: FastifyInstance, clients: ServiceClients): void {
  app.patch<{ Body: QuietHoursBody }>(
    "/account/quiet-hours",
    { schema: updateQuietHoursSchema },
    async (request, reply) => {
      const { start, end, apiKey } = request.body;
      // The body parsers take a null parameter as an absent one (docs/decisions.md), so
      // `quietHours: null` reaches here as neither start nor end: that clears them.
      const clear = start === undefined && end === undefined;
      if (!clear && (start === undefined || end === undefined)) {
        const errors: Record<string, string[]> = {};
        if (start === undefined) errors.start = ["start is required (or quietHours: null)"];
        if (end === undefined) errors.end = ["end is required (or quietHours: null)"];
        return reply.code(400).send({ errors });
      }
      if (!clear && start === end) {
        return reply.code(400).send({ errors: { end: ["end must differ from start"] } });
      }
      const answer = await clients.quietHours.updateQuietHours(
        clear ? {} : { quietHours: { start: start ?? "", end: end ?? "" } },
        serviceCall(request, reply, request.body),
      );
      return rendered(apiKey, answer.quietHours);
    },
  );
}
