import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import { type InboundMessage, OptOutType } from "../../gen/sms/v1/types_pb.ts";
import { type Credentials, serviceCall } from "./call-options.ts";
import { getInboundSchema, listInboundSchema } from "./inbound-schemas.ts";
import type { ServiceClients } from "./service-clients.ts";

interface ListQuery extends Credentials {
  from?: string;
  to?: string;
  since?: string;
  pageToken?: string;
}

const OPT_OUT_TYPE_NAME: Partial<Record<OptOutType, string>> = {
  [OptOutType.STOP]: "STOP",
  [OptOutType.START]: "START",
  [OptOutType.HELP]: "HELP",
};

/** The design's shape: `{id, from, to, text, parts, receivedAt, optOutType?, incomplete?}`. */
export function renderInbound(message: InboundMessage | undefined) {
  if (!message) throw new Error("the service returned no inbound message");
  const optOutType = OPT_OUT_TYPE_NAME[message.optOutType];
  return {
    id: Number(message.id),
    from: message.sender,
    to: message.to,
    text: message.text,
    parts: message.parts,
    receivedAt: message.receiveTime ? timestampDate(message.receiveTime).toISOString() : "",
    ...(optOutType && { optOutType }),
    ...(message.incomplete && { incomplete: true }),
  };
}

export function inboundRoutes(app: FastifyInstance, clients: ServiceClients): void {
  app.get<{ Querystring: ListQuery }>(
    "/inbound",
    { schema: listInboundSchema },
    async (request, reply) => {
      const { from, to, since, pageToken } = request.query;
      const page = await clients.inbound.listInboundMessages(
        {
          sender: from ?? "",
          to: to ?? "",
          ...(since && { startTime: timestampFromDate(new Date(since)) }),
          pageToken: pageToken ?? "",
        },
        serviceCall(request, reply, request.query),
      );
      return {
        inbound: page.inboundMessages.map(renderInbound),
        nextPageToken: page.nextPageToken,
      };
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
