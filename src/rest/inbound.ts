import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import {
  type InboundMessage,
  type InboundWebhook,
  NotificationState,
  OptOutType,
} from "../../gen/sms/v1/types_pb.ts";
import { type Credentials, serviceCall } from "./call-options.ts";
import { getInboundSchema, listInboundSchema } from "./inbound-schemas.ts";
import { type PageQuery, pageRequest, restPage } from "./paging.ts";
import type { ServiceClients } from "./service-clients.ts";

interface ListQuery extends Credentials, PageQuery {
  from?: string;
  to?: string;
  since?: string;
}

const OPT_OUT_TYPE_NAME: Partial<Record<OptOutType, string>> = {
  [OptOutType.STOP]: "STOP",
  [OptOutType.START]: "START",
  [OptOutType.HELP]: "HELP",
};

const STATE_NAME: Record<NotificationState, string> = {
  [NotificationState.UNSPECIFIED]: "PENDING",
  [NotificationState.PENDING]: "PENDING",
  [NotificationState.DELIVERED]: "DELIVERED",
  [NotificationState.GAVE_UP]: "GAVE_UP",
  [NotificationState.SKIPPED]: "SKIPPED",
};

const isoTime = (time: Timestamp | undefined) => (time ? timestampDate(time).toISOString() : "");

/** An inbound message's webhook (GET /inbound/{id}): where it stands, every attempt. */
function renderWebhook(webhook: InboundWebhook) {
  return {
    state: STATE_NAME[webhook.state],
    url: webhook.url,
    attempts: webhook.attempts.map((a) => ({
      at: isoTime(a.attemptTime),
      httpStatus: a.httpStatus,
      ...(a.error && { error: a.error }),
      durationMs: a.durationMs,
    })),
    ...(webhook.nextAttemptTime && { nextAttemptAt: isoTime(webhook.nextAttemptTime) }),
  };
}

/**
 * The design's shape: `{id, from, to, text, parts, receivedAt, optOutType?, incomplete?}`, and
 * `webhook` when the service answered it (GetInboundMessage, for an account with an inbound URL).
 */
export function renderInbound(message: InboundMessage | undefined) {
  if (!message) throw new Error("the service returned no inbound message");
  const optOutType = OPT_OUT_TYPE_NAME[message.optOutType];
  return {
    id: Number(message.id),
    from: message.sender,
    to: message.to,
    text: message.text,
    parts: message.parts,
    receivedAt: isoTime(message.receiveTime),
    ...(optOutType && { optOutType }),
    ...(message.incomplete && { incomplete: true }),
    ...(message.webhook && { webhook: renderWebhook(message.webhook) }),
  };
}

export function inboundRoutes(app: FastifyInstance, clients: ServiceClients): void {
  app.get<{ Querystring: ListQuery }>(
    "/inbound",
    { schema: listInboundSchema },
    async (request, reply) => {
      const { from, to, since } = request.query;
      const page = await clients.inbound.listInboundMessages(
        {
          sender: from ?? "",
          to: to ?? "",
          ...(since && { startTime: timestampFromDate(new Date(since)) }),
          ...pageRequest(request.query),
        },
        serviceCall(request, reply, request.query),
      );
      return restPage("inbound", page.inboundMessages.map(renderInbound), page);
    },
  );

  app.get<{ Params: { id: string }; Querystring: Credentials }>(
    "/inbound/:id",
    { schema: getInboundSchema },
    async (request, reply) => {
      const { inboundMessage } = await clients.inbound.getInboundMessage(
        { id: BigInt(request.params.id) },
        serviceCall(request, reply, request.query),
      );
      return renderInbound(inboundMessage);
    },
  );
}
