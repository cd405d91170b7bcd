import type { FastifyInstance } from "fastify";
import type { SenderName } from "../../gen/sms/v1/types_pb.ts";
import { SENDER_NAME_PAGES } from "../services/page-tokens.ts";
import { OWNER_TYPES, PURPOSES } from "../services/sender-name-service.ts";
import { serviceCall } from "./call-options.ts";
import {
  createSenderNameSchema,
  deleteSenderNameSchema,
  listSenderNamesSchema,
} from "./sender-name-schemas.ts";
import type { ServiceClients } from "./service-clients.ts";

interface Credentials {
  apiKey: string;
  apiSecret: string;
}

interface CreateSenderNameBody extends Credentials {
  name: string;
  purpose: keyof typeof PURPOSES;
  ownerType: keyof typeof OWNER_TYPES;
  owner: string;
  exampleMsg: string;
}

export function renderSenderName(senderName: SenderName | undefined) {
  if (!senderName) throw new Error("the service returned no sender name");
  return {
    name: senderName.name,
    pending: senderName.pending,
    reliable: senderName.reliable,
    default: senderName.isDefault,
  };
}

export function senderNameRoutes(app: FastifyInstance, clients: ServiceClients): void {
  app.post<{ Body: CreateSenderNameBody }>(
    "/sender_names",
    { schema: createSenderNameSchema },
    async (request, reply) => {
      const { name, purpose, ownerType, owner, exampleMsg } = request.body;
      const { senderName } = await clients.senderNames.createSenderName(
        { name, purpose: PURPOSES[purpose], ownerType: OWNER_TYPES[ownerType], owner, exampleMsg },
        serviceCall(request, reply, request.body),
      );
      return renderSenderName(senderName);
    },
  );

  app.get<{ Querystring: Credentials }>(
    "/sender_names",
    { schema: listSenderNamesSchema },
    async (request, reply) => {
      // The spec answers every name at once: all pages (one, at the most an account may hold).
      const senderNames: SenderName[] = [];
      let pageToken = "";
      do {
        const page = await clients.senderNames.listSenderNames(
          { pageSize: SENDER_NAME_PAGES.max, pageToken },
          serviceCall(request, reply, request.query),
        );
        senderNames.push(...page.senderNames);
        pageToken = page.nextPageToken;
      } while (pageToken !== "");
      return { sender_names: senderNames.map(renderSenderName) };
    },
  );

  app.delete<{ Params: { name: string }; Querystring: Credentials }>(
    "/sender_names/:name",
    { schema: deleteSenderNameSchema },
    async (request, reply) => {
      const { senderName } = await clients.senderNames.deleteSenderName(
        { name: request.params.name },
        serviceCall(request, reply, request.query),
      );
      return renderSenderName(senderName);
    },
  );
}
