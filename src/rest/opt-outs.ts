import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import {
  type OptOut,
  OptOutAction,
  type OptOutChange,
  OptOutSource,
} from "../../gen/sms/v1/types_pb.ts";
import { type Credentials, serviceCall } from "./call-options.ts";
import {
  createOptOutSchema,
  deleteOptOutSchema,
  listOptOutChangesSchema,
  listOptOutsSchema,
} from "./opt-out-schemas.ts";
import { type PageQuery, pageRequest, restPage } from "./paging.ts";
import type { ServiceClients } from "./service-clients.ts";

const SOURCE_NAME: Record<OptOutSource, string> = {
  [OptOutSource.UNSPECIFIED]: "API",
  [OptOutSource.KEYWORD]: "KEYWORD",
  [OptOutSource.API]: "API",
  [OptOutSource.OPERATOR]: "OPERATOR",
};

const iso = (time: OptOut["createTime"]) => (time ? timestampDate(time).toISOString() : "");

/** The design's shape: `{number, source, keyword?, createTime}`. */
export function renderOptOut(optOut: OptOut | undefined) {
  if (!optOut) throw new Error("the service returned no opt-out");
  return {
    number: optOut.number,
    source: SOURCE_NAME[optOut.source],
    ...(optOut.keyword && { keyword: optOut.keyword }),
    createTime: iso(optOut.createTime),
  };
}

function renderChange(change: OptOutChange) {
  return {
    number: change.number,
    action: change.action === OptOutAction.REMOVED ? "REMOVED" : "ADDED",
    source: SOURCE_NAME[change.source],
    ...(change.keyword && { keyword: change.keyword }),
    ...(change.inboundMessageId !== undefined && { inboundId: Number(change.inboundMessageId) }),
    time: iso(change.changeTime),
  };
}

export function optOutRoutes(app: FastifyInstance, clients: ServiceClients): void {
  app.get<{ Querystring: Credentials & PageQuery }>(
    "/opt-outs",
    { schema: listOptOutsSchema },
    async (request, reply) => {
      const page = await clients.optOuts.listOptOuts(
        pageRequest(request.query),
        serviceCall(request, reply, request.query),
      );
      return restPage("optOuts", page.optOuts.map(renderOptOut), page);
    },
  );

  app.post<{ Body: Credentials & { number: string } }>(
    "/opt-outs",
    { schema: createOptOutSchema },
    async (request, reply) => {
      const { optOut } = await clients.optOuts.createOptOut(
        { number: request.body.number },
        serviceCall(request, reply, request.body),
      );
      return renderOptOut(optOut);
    },
  );

  app.get<{ Querystring: Credentials & PageQuery & { number?: string } }>(
    "/opt-outs/changes",
    { schema: listOptOutChangesSchema },
    async (request, reply) => {
      const page = await clients.optOuts.listOptOutChanges(
        { number: request.query.number ?? "", ...pageRequest(request.query) },
        serviceCall(request, reply, request.query),
      );
      return restPage("changes", page.changes.map(renderChange), page);
    },
  );

  app.delete<{ Params: { number: string }; Querystring: Credentials }>(
    "/opt-outs/:number",
    { schema: deleteOptOutSchema },
    async (request, reply) => {
      const { optOut } = await clients.optOuts.deleteOptOut(
        { number: request.params.number },
        serviceCall(request, reply, request.query),
      );
      return renderOptOut(optOut);
    },
  );
}
