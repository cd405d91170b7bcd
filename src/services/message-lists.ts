import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, createContextKey, type HandlerContext } from "@connectrpc/connect";
import type {
  ListBatchesRequest,
  ListBatchesResponse,
  ListBatchMessagesRequest,
  ListBatchMessagesResponse,
  ListMessagesRequest,
  ListMessagesResponse,
} from "../../gen/sms/v1/messaging_pb.ts";
import { MessageStatus } from "../../gen/sms/v1/types_pb.ts";
import { statusNameOf } from "../domain/status-codes.ts";
import { fieldErrors, notFound } from "../errors/api-errors.ts";
import type { Store } from "../store/database.ts";
import {
  findBatchMessagePage,
  findBatchPage,
  findMessagePage,
  type MessageFilter,
  type TimeCursor,
} from "../store/message-listing.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateAccount } from "./authentication.ts";
import { deadlineOf } from "./database-deadlines.ts";
import {
  batchResource,
  messageProjection,
  messageResource,
  messageSummary,
  SUMMARY_PROJECTION,
} from "./message-resources.ts";
import {
  BATCH_MESSAGE_PAGES,
  cursorOf,
  MESSAGE_PAGES,
  paged,
  pageSize,
  pageToken,
} from "./page-tokens.ts";

// ListMessages, ListBatches and ListBatchMessages of MessagingService: every list is the
// caller's account only, keyset-paged (services/page-tokens.ts) on an index (store/message-listing.ts).

/**
 * Set by the REST façade on the calls of GET /sms-batch/{id}, which shows each message's id,
 * from, to and status and the counters of those statuses; only the in-process client can set it.
 * GetBatch then answers without `progress` and reads no message, and ListBatchMessages reads and
 * answers those four fields only: the batch's messages are read once, with few of their fields
 * (figure 3), and the counters agree with the statuses listed.
 */
export const BATCH_SUMMARY = createContextKey(false, {
  description: "GET /sms-batch/{id}: a batch's messages read once, id, from, to and status only",
});

export interface ListDeps {
  store: Store;
  directory: AccountDirectory;
  requestMs: number;
}

export function messageLists(deps: ListDeps) {
  const { store, directory } = deps;
  const dbOptions = (ctx: HandlerContext) => deadlineOf(ctx, deps.requestMs).options();

  return {
    async listMessages(
      req: ListMessagesRequest,
      ctx: HandlerContext,
    ): Promise<Omit<ListMessagesResponse, "$typeName">> {
      const account = await authenticateAccount(ctx, directory);
      const filter = messageFilter(account.apiKey, req);
      const limit = pageSize(req.pageSize, MESSAGE_PAGES);
      // The token is bound to the account and filters, not to the view or page size.
      const scope = ["ListMessages", filter];
      const after = cursorOf(req.pageToken, scope, ["number", "number"]) as TimeCursor | undefined;
      const docs = await findMessagePage(
        store,
        filter,
        after,
        limit,
        messageProjection(req.view),
        dbOptions(ctx),
      );
      const [page, nextPageToken] = paged(docs, limit, (last) =>
        pageToken(scope, [last.createdAt.getTime(), last._id]),
      );
      return { messages: page.map(messageResource), nextPageToken };
    },

    async listBatches(
      req: ListBatchesRequest,
      ctx: HandlerContext,
    ): Promise<Omit<ListBatchesResponse, "$typeName">> {
      const account = await authenticateAccount(ctx, directory);
      const limit = pageSize(req.pageSize, MESSAGE_PAGES);
      const scope = ["ListBatches", account.apiKey];
      const after = cursorOf(req.pageToken, scope, ["number", "number"]) as TimeCursor | undefined;
      const docs = await findBatchPage(store, account.apiKey, after, limit, dbOptions(ctx));
      const [page, nextPageToken] = paged(docs, limit, (last) =>
        pageToken(scope, [last.createdAt.getTime(), last._id]),
      );
      return { batches: page.map((doc) => batchResource(doc)), nextPageToken };
    },

    async listBatchMessages(
      req: ListBatchMessagesRequest,
      ctx: HandlerContext,
    ): Promise<Omit<ListBatchMessagesResponse, "$typeName">> {
      const account = await authenticateAccount(ctx, directory);
      const limit = pageSize(req.pageSize, BATCH_MESSAGE_PAGES);
      const scope = ["ListBatchMessages", account.apiKey, req.batchId];
      const after = cursorOf(req.pageToken, scope, ["number"]);
      const batch = await store.batches.findOne(
        { _id: Number(req.batchId), accountId: account.apiKey },
        { ...dbOptions(ctx), projection: { _id: 1 } },
      );
      if (!batch) throw batchNotFound("batch_id", req.batchId);
      const summary = ctx.values.get(BATCH_SUMMARY);
      const docs = await findBatchMessagePage(
        store,
        batch._id,
        after?.[0] as number | undefined,
        limit,
        summary ? SUMMARY_PROJECTION : messageProjection(req.view),
        dbOptions(ctx),
      );
      const [page, nextPageToken] = paged(docs, limit, (last) => pageToken(scope, [last._id]));
      return { messages: page.map(summary ? messageSummary : messageResource), nextPageToken };
    },
  };
}

export const batchNotFound = (field: string, id: bigint) =>
  notFound(field, `no batch with id ${id}`, "BATCH_NOT_FOUND", {
    type: "sms.v1.Batch",
    name: `${id}`,
  });

function messageFilter(accountId: string, req: ListMessagesRequest): MessageFilter {
  const filter: MessageFilter = { accountId };
  if (req.status !== MessageStatus.UNSPECIFIED) {
    const status = statusNameOf(req.status);
    if (!status) {
      throw fieldErrors(Code.InvalidArgument, { status: `status ${req.status} is not a status` });
    }
    filter.status = status;
  }
  if (req.to !== "") filter.to = req.to;
  if (req.clientRef !== "") filter.clientRef = req.clientRef;
  if (req.batchId !== undefined) filter.batchId = Number(req.batchId);
  if (req.startTime) filter.start = timestampDate(req.startTime);
  if (req.endTime) filter.end = timestampDate(req.endTime);
  return filter;
}
