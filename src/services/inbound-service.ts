import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  type InboundService,
  type InboundSettings,
  InboundSettingsSchema,
  type UpdateInboundSettingsRequest,
} from "../../gen/sms/v1/inbound_pb.ts";
import {
  type InboundMessage,
  InboundMessageSchema,
  OptOutType,
} from "../../gen/sms/v1/types_pb.ts";
import type { OptOutType as TypeName } from "../domain/opt-out-type.ts";
import { type FieldMessages, invalidArgument, notFound } from "../errors/api-errors.ts";
import { keywordReply, keywordReplyError } from "../opt-outs/keyword-replies.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc } from "../store/documents.ts";
import {
  findInboundPage,
  getInboundMessage,
  type InboundCursor,
  type InboundFilter,
  type InboundMessageDoc,
} from "../store/inbound-messages.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateAccount } from "./authentication.ts";
import { checkCallbackUrl } from "./callback-urls.ts";
import { deadlineOf } from "./database-deadlines.ts";
import { webhookProgress } from "./message-resources.ts";
import { cursorOf, MESSAGE_PAGES, paged, pageSize, pageToken } from "./page-tokens.ts";

export interface InboundServiceDeps {
  store: Store;
  directory: AccountDirectory;
  timeouts?: { requestMs: number };
}

const TYPE_TO_PROTO: Record<TypeName, OptOutType> = {
  STOP: OptOutType.STOP,
  START: OptOutType.START,
  HELP: OptOutType.HELP,
};

/**
 * The InboundMessage resource of a stored message; with `webhook`, its inbound webhook and every
 * attempt (GetInboundMessage), as GetMessage answers a message's status webhooks.
 */
export function inboundResource(
  doc: InboundMessageDoc,
  options: { webhook?: boolean } = {},
): InboundMessage {
  return create(InboundMessageSchema, {
    id: BigInt(doc._id),
    sender: doc.from,
    to: doc.to,
    text: doc.text,
    parts: doc.parts,
    receiveTime: timestampFromDate(doc.receivedAt),
    optOutType: doc.optOutType ? TYPE_TO_PROTO[doc.optOutType] : OptOutType.UNSPECIFIED,
    incomplete: doc.incomplete === true,
    ...(options.webhook && doc.webhook && { webhook: webhookProgress(doc.webhook) }),
  });
}

export const inboundNotFound = (id: bigint) =>
  notFound("id", `no inbound message with id ${id}`, "INBOUND_MESSAGE_NOT_FOUND", {
    type: "sms.v1.InboundMessage",
    name: `${id}`,
  });

type SettingsFields = Pick<AccountDoc, "name" | "inboundUrl" | "keywordReplies">;

function settingsResource(account: SettingsFields): InboundSettings {
  const reply = (type: TypeName) => keywordReply(type, account.name, account.keywordReplies);
  return create(InboundSettingsSchema, {
    inboundUrl: account.inboundUrl ?? "",
    stopReply: reply("STOP"),
    startReply: reply("START"),
    helpReply: reply("HELP"),
  });
}

const REPLY_FIELDS = [
  ["stopReply", "stop_reply", "STOP"],
  ["startReply", "start_reply", "START"],
  ["helpReply", "help_reply", "HELP"],
] as const;

/** The update of UpdateInboundSettings; refuses what is wrong, by proto field path. */
function settingsUpdate(req: UpdateInboundSettingsRequest) {
  const errors: FieldMessages = {};
  const set: Record<string, string> = {};
  const unset: Record<string, ""> = {};
  if (req.inboundUrl !== undefined) {
    const error = req.inboundUrl ? checkCallbackUrl("inboundUrl", req.inboundUrl) : undefined;
    if (error) errors.inbound_url = error;
    else if (req.inboundUrl) set.inboundUrl = req.inboundUrl;
    else unset.inboundUrl = "";
  }
  for (const [field, path, type] of REPLY_FIELDS) {
    const text = req[field];
    if (text === undefined) continue;
    const error = keywordReplyError(field, text);
    if (error) errors[path] = error;
    else if (text) set[`keywordReplies.${type}`] = text;
    else unset[`keywordReplies.${type}`] = "";
  }
  if (Object.keys(errors).length > 0) throw invalidArgument(errors);
  return {
    ...(Object.keys(set).length > 0 && { $set: set }),
    ...(Object.keys(unset).length > 0 && { $unset: unset }),
  };
}

/** The account's inbound messages and inbound settings (docs/design.md "Two-way messaging": "Reading"). */
export function createInboundService(deps: InboundServiceDeps): ServiceImpl<typeof InboundService> {
  const { store, directory } = deps;
  const dbOptions = (ctx: HandlerContext) =>
    deadlineOf(ctx, deps.timeouts?.requestMs ?? 5_000).options();
  const settingsProjection = { name: 1, inboundUrl: 1, keywordReplies: 1 } as const;

  return {
    async listInboundMessages(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const filter: InboundFilter = { accountId: account.apiKey };
      if (req.sender !== "") filter.from = req.sender;
      if (req.to !== "") filter.to = req.to;
      if (req.startTime) filter.start = timestampDate(req.startTime);
      if (req.endTime) filter.end = timestampDate(req.endTime);
      const limit = pageSize(req.pageSize, MESSAGE_PAGES);
      const scope = ["ListInboundMessages", filter];
      const after = cursorOf(req.pageToken, scope, ["number", "number"]) as
        | InboundCursor
        | undefined;
      const docs = await findInboundPage(store.db, filter, after, limit);
      const [page, nextPageToken] = paged(docs, limit, (last) =>
        pageToken(scope, [last.receivedAt.getTime(), last._id]),
      );
      return { inboundMessages: page.map((doc) => inboundResource(doc)), nextPageToken };
    },

    async getInboundMessage(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const doc = await getInboundMessage(store.db, account.apiKey, Number(req.id));
      if (!doc) throw inboundNotFound(req.id);
      return { inboundMessage: inboundResource(doc, { webhook: true }) };
    },

    async getInboundSettings(_req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const doc = await store.accounts.findOne(
        { _id: account.apiKey },
        { ...dbOptions(ctx), projection: settingsProjection },
      );
      if (!doc) throw new Error("the authenticated account is gone");
      return { settings: settingsResource(doc) };
    },

    async updateInboundSettings(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const update = settingsUpdate(req);
      const options = { ...dbOptions(ctx), projection: settingsProjection };
      const doc =
        Object.keys(update).length > 0
          ? await store.accounts.findOneAndUpdate({ _id: account.apiKey }, update, {
              ...options,
              returnDocument: "after",
            })
          : await store.accounts.findOne({ _id: account.apiKey }, options);
      if (!doc) throw new Error("the authenticated account is gone");
      return { settings: settingsResource(doc) };
    },
  };
}
