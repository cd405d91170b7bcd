import type { Document, Filter, FindOptions, IndexDescription } from "mongodb";
import type { StatusName } from "../domain/message-status.ts";
import type { Store } from "./database.ts";
import type { BatchDoc, MessageDoc, SenderNameDoc } from "./documents.ts";

// The list queries: keyset pages, newest first for messages and batches, each read through an
// index that starts with the account, so a page reads its own documents and little else at any
// size (docs/decisions.md, "Reads and listings"). A page comes in one reply (batchSize): the
// driver's default first batch of 101 documents would take a getMore for the rest of a larger page.

/** Which of an account's messages a list shows. */
export interface MessageFilter {
  accountId: string;
  status?: StatusName;
  to?: string;
  batchId?: number;
  /** The caller's own reference, compared exactly. */
  clientRef?: string;
  /** Inclusive. */
  start?: Date;
  /** Exclusive. */
  end?: Date;
}

/** The last message of the previous page: its creation time (ms) and id. */
export type TimeCursor = [createdAtMs: number, id: number];

type Named = IndexDescription & { name: string };

/** One index per leading filter; the list's order after it. */
export const LISTING_INDEXES: Record<"messages" | "batches" | "senderNames", Named[]> = {
  messages: [
    { name: "account_created", key: { accountId: 1, createdAt: -1, _id: -1 } },
    { name: "account_batch_created", key: { accountId: 1, batchId: 1, createdAt: -1, _id: -1 } },
    { name: "account_to_created", key: { accountId: 1, to: 1, createdAt: -1, _id: -1 } },
    { name: "account_status_created", key: { accountId: 1, status: 1, createdAt: -1, _id: -1 } },
    {
      name: "account_client_ref_created",
      key: { accountId: 1, clientRef: 1, createdAt: -1, _id: -1 },
    },
  ],
  batches: [{ name: "account_batches_created", key: { accountId: 1, createdAt: -1, _id: -1 } }],
  senderNames: [
    { name: "account_sender_names_created", key: { accountId: 1, createdAt: 1, name: 1 } },
  ],
};

export async function ensureListingIndexes(store: Store): Promise<void> {
  await Promise.all([
    store.messages.createIndexes(LISTING_INDEXES.messages),
    store.batches.createIndexes(LISTING_INDEXES.batches),
    store.senderNames.createIndexes(LISTING_INDEXES.senderNames),
  ]);
}

/**
 * The index a message list reads: the one of its most selective set filter (a client reference,
 * a batch, then a recipient, then a status); other filters are checked on the documents it reads.
 */
export function messageIndexFor(filter: MessageFilter): string {
  if (filter.clientRef !== undefined) return "account_client_ref_created";
  if (filter.batchId !== undefined) return "account_batch_created";
  if (filter.to !== undefined) return "account_to_created";
  if (filter.status !== undefined) return "account_status_created";
  return "account_created";
}

/**
 * The time part of a newest-first page's query on a time `field` and `_id`: the window
 * [start, end) and, after a cursor, (field, _id) < cursor. The range bound keeps the index scan
 * tight, the $or breaks ties.
 */
export function newestFirst(
  field: string,
  window: { start?: Date | undefined; end?: Date | undefined },
  after: TimeCursor | undefined,
): Document {
  const range: { $gte?: Date; $lt?: Date; $lte?: Date } = {};
  if (window.start) range.$gte = window.start;
  if (window.end) range.$lt = window.end;
  const query: Document = {};
  if (after) {
    const at = new Date(after[0]);
    if (!range.$lt || at < range.$lt) {
      delete range.$lt;
      range.$lte = at;
    }
    query.$or = [{ [field]: { $lt: at } }, { [field]: at, _id: { $lt: after[1] } }];
  }
  if (Object.keys(range).length > 0) query[field] = range;
  return query;
}

/** The query of one page of a message list; exported so tests can explain it. */
export function messagePageQuery(
  filter: MessageFilter,
  after: TimeCursor | undefined,
): { query: Filter<MessageDoc>; options: FindOptions } {
  const query: Filter<MessageDoc> = { accountId: filter.accountId };
  if (filter.batchId !== undefined) query.batchId = filter.batchId;
  if (filter.to !== undefined) query.to = filter.to;
  if (filter.status !== undefined) query.status = filter.status;
  if (filter.clientRef !== undefined) query.clientRef = filter.clientRef;
  Object.assign(query, newestFirst("createdAt", filter, after));
  return {
    query,
    options: { sort: { createdAt: -1, _id: -1 }, hint: messageIndexFor(filter) },
  };
}

/** Up to `limit` + 1 messages: the extra one only tells that there is a next page. */
export function findMessagePage(
  store: Store,
  filter: MessageFilter,
  after: TimeCursor | undefined,
  limit: number,
  projection: Document,
  options: FindOptions = {},
): Promise<MessageDoc[]> {
  const page = messagePageQuery(filter, after);
  return store.messages
    .find(page.query, {
      ...options,
      ...page.options,
      projection,
      limit: limit + 1,
      batchSize: limit + 1,
    })
    .toArray() as Promise<MessageDoc[]>;
}

/** A batch's messages in submission order (ascending id), after message `afterId`. */
export function findBatchMessagePage(
  store: Store,
  batchId: number,
  afterId: number | undefined,
  limit: number,
  projection: Document,
  options: FindOptions = {},
): Promise<MessageDoc[]> {
  const query: Filter<MessageDoc> = { batchId };
  if (afterId !== undefined) query._id = { $gt: afterId };
  return store.messages
    .find(query, {
      ...options,
      projection,
      sort: { _id: 1 },
      hint: "batch_messages",
      limit: limit + 1,
      batchSize: limit + 1,
    })
    .toArray() as Promise<MessageDoc[]>;
}

/** An account's batches, newest first. */
export function findBatchPage(
  store: Store,
  accountId: string,
  after: TimeCursor | undefined,
  limit: number,
  options: FindOptions = {},
): Promise<BatchDoc[]> {
  const query: Filter<BatchDoc> = { accountId };
  if (after) {
    const at = new Date(after[0]);
    query.createdAt = { $lte: at };
    query.$or = [{ createdAt: { $lt: at } }, { createdAt: at, _id: { $lt: after[1] } }];
  }
  return store.batches
    .find(query, {
      ...options,
      sort: { createdAt: -1, _id: -1 },
      hint: "account_batches_created",
      limit: limit + 1,
    })
    .toArray();
}

/** The last sender name of the previous page: its creation time (ms) and name. */
export type NameCursor = [createdAtMs: number, name: string];

/** An account's sender names, oldest first. */
export function findSenderNamePage(
  store: Store,
  accountId: string,
  after: NameCursor | undefined,
  limit: number,
  options: FindOptions = {},
): Promise<SenderNameDoc[]> {
  const query: Filter<SenderNameDoc> = { accountId };
  if (after) {
    const at = new Date(after[0]);
    query.createdAt = { $gte: at };
    query.$or = [{ createdAt: { $gt: at } }, { createdAt: at, name: { $gt: after[1] } }];
  }
  return store.senderNames
    .find(query, {
      ...options,
      sort: { createdAt: 1, name: 1 },
      hint: "account_sender_names_created",
      limit: limit + 1,
    })
    .toArray();
}
