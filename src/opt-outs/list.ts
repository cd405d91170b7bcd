/**
 * Opt-out lists (docs/design.md "Two-way messaging": "Scope and effect", "Managing"): one document per
 * (account, recipient number) in `optOuts`, every change kept in `optOutChanges`, and the
 * 5-minute slots of the automatic replies in `optOutReplies` (src/opt-outs/reply-slots.ts).
 * Numbers are kept in one form, `+` and digits, whatever form a send or a handset used.
 */

import type { Collection, Db, FindOptions, MongoServerError } from "mongodb";
import { ObjectId } from "mongodb";
import type { ReplySlotDoc } from "./reply-slots.ts";

export type OptOutSource = "KEYWORD" | "API" | "OPERATOR";

/** Whose list and which number; `optOutId` makes the document's `_id` of it. */
export interface OptOutKey {
  accountId: string;
  number: string;
}

export interface OptOutDoc {
  /**
   * `<accountId>/<number>`: one string, so a batch's 10000 numbers are one `$in` on the `_id`
   * index (on the test emulator 6 times faster than embedded `{accountId, number}` keys).
   */
  _id: string;
  accountId: string;
  number: string;
  source: OptOutSource;
  /** The word the handset sent, as it wrote it (KEYWORD only). */
  keyword?: string;
  /** The inbound message that opted the number out (KEYWORD only). */
  inboundId?: number;
  createTime: Date;
}

export interface OptOutChangeDoc {
  /** `inbound:<id>` for a handset's word (one change per inbound message), else `op:<ObjectId>`. */
  _id: string;
  accountId: string;
  number: string;
  action: "ADDED" | "REMOVED";
  source: OptOutSource;
  keyword?: string;
  inboundId?: number;
  at: Date;
}

export interface OptOutStore {
  optOuts: Collection<OptOutDoc>;
  changes: Collection<OptOutChangeDoc>;
  replies: Collection<ReplySlotDoc>;
}

export function openOptOuts(db: Db): OptOutStore {
  return {
    optOuts: db.collection<OptOutDoc>("optOuts"),
    changes: db.collection<OptOutChangeDoc>("optOutChanges"),
    replies: db.collection<ReplySlotDoc>("optOutReplies"),
  };
}

export async function ensureOptOutIndexes(store: OptOutStore): Promise<void> {
  await Promise.all([
    store.optOuts.createIndex(
      { accountId: 1, createTime: -1, number: -1 },
      { name: "account_opt_outs_created" },
    ),
    store.changes.createIndex({ accountId: 1, at: -1, _id: -1 }, { name: "account_changes" }),
    store.changes.createIndex(
      { accountId: 1, number: 1, at: -1, _id: -1 },
      { name: "account_number_changes" },
    ),
    // Slots older than the window are dead weight: gone within a few minutes of it.
    store.replies.createIndex({ sentAt: 1 }, { name: "reply_slots_ttl", expireAfterSeconds: 900 }),
  ]);
}

/** `+` and digits: the one form of a number on the list ("4915..." and "+4915..." are one). */
export function canonicalNumber(number: string): string {
  return number.startsWith("+") ? number : `+${number}`;
}

export function optOutKey(accountId: string, number: string): OptOutKey {
  return { accountId, number: canonicalNumber(number) };
}

export function optOutId(key: OptOutKey): string {
  return `${key.accountId}/${key.number}`;
}

/** The numbers (canonical) of `numbers` on the account's list. */
export async function optedOutAmong(
  store: OptOutStore,
  accountId: string,
  numbers: Iterable<string>,
  options: { maxTimeMS?: number; signal?: AbortSignal } = {},
): Promise<Set<string>> {
  const ids = [...new Set([...numbers].map(canonicalNumber))].map((n) =>
    optOutId({ accountId, number: n }),
  );
  if (ids.length === 0) return new Set();
  const found = await store.optOuts
    .find({ _id: { $in: ids } }, { projection: { _id: 0, number: 1 }, ...options })
    .toArray();
  return new Set(found.map((doc) => doc.number));
}

export function findOptOut(store: OptOutStore, accountId: string, number: string) {
  return store.optOuts.findOne({ _id: optOutId(optOutKey(accountId, number)) });
}

/** What a change was made by: the handset's word (with its inbound message), the account, the operator. */
export type ChangeCause =
  | { source: "KEYWORD"; keyword: string; inboundId: number }
  | { source: "API" | "OPERATOR" };

function changeDoc(
  key: OptOutKey,
  action: OptOutChangeDoc["action"],
  cause: ChangeCause,
  at: Date,
): OptOutChangeDoc {
  const doc: OptOutChangeDoc = {
    _id: cause.source === "KEYWORD" ? `inbound:${cause.inboundId}` : `op:${new ObjectId()}`,
    accountId: key.accountId,
    number: key.number,
    action,
    source: cause.source,
    at,
  };
  if (cause.source === "KEYWORD") {
    doc.keyword = cause.keyword;
    doc.inboundId = cause.inboundId;
  }
  return doc;
}

const isDuplicate = (error: unknown) => (error as MongoServerError)?.code === 11000;

/** Keeps a change; a handset's word redelivered is kept once (its id is its inbound message's). */
async function recordChange(store: OptOutStore, change: OptOutChangeDoc): Promise<void> {
  try {
    await store.changes.insertOne(change);
  } catch (error) {
    if (!isDuplicate(error)) throw error;
  }
}

/**
 * Puts a number on the list. The account's and the operator's entries are added only when the
 * number has none; a handset's STOP also takes over an entry of theirs (from then on only its START
 * lifts it). Answers the entry in force and whether this call changed the list.
 */
export async function addOptOut(
  store: OptOutStore,
  key: OptOutKey,
  cause: ChangeCause,
  now: Date,
): Promise<{ optOut: OptOutDoc; changed: boolean }> {
  const id = optOutId(key);
  const existing = await store.optOuts.findOne({ _id: id });
  if (existing && (existing.source === "KEYWORD" || cause.source !== "KEYWORD")) {
    return { optOut: existing, changed: false };
  }
  const doc: OptOutDoc = {
    _id: id,
    accountId: key.accountId,
    number: key.number,
    source: cause.source,
    createTime: existing?.createTime ?? now,
  };
  if (cause.source === "KEYWORD") {
    doc.keyword = cause.keyword;
    doc.inboundId = cause.inboundId;
  }
  // A handset's word is kept before the list changes: a crash between them is redelivered by the
  // carrier and finishes the change, its record kept once.
  if (cause.source === "KEYWORD") await recordChange(store, changeDoc(key, "ADDED", cause, now));
  try {
    if (existing) {
      const replaced = await store.optOuts.findOneAndReplace(
        { _id: id, source: existing.source },
        doc,
        { returnDocument: "after" },
      );
      if (!replaced) return addOptOut(store, key, cause, now);
    } else {
      await store.optOuts.insertOne(doc);
    }
  } catch (error) {
    // Added meanwhile by another call: the list holds what that one put there.
    if (!isDuplicate(error)) throw error;
    return addOptOut(store, key, cause, now);
  }
  if (cause.source !== "KEYWORD") await recordChange(store, changeDoc(key, "ADDED", cause, now));
  return { optOut: doc, changed: true };
}

/**
 * Takes a number off the list if its entry's source is one of `sources`. Answers the removed
 * entry, "not-removable" when its source is another, undefined when the number is not listed.
 */
export async function removeOptOut(
  store: OptOutStore,
  key: OptOutKey,
  sources: readonly OptOutSource[],
  cause: ChangeCause,
  now: Date,
): Promise<OptOutDoc | "not-removable" | undefined> {
  const id = optOutId(key);
  const existing = await store.optOuts.findOne({ _id: id });
  if (!existing) return undefined;
  if (!sources.includes(existing.source)) return "not-removable";
  if (cause.source === "KEYWORD") await recordChange(store, changeDoc(key, "REMOVED", cause, now));
  const removed = await store.optOuts.findOneAndDelete({ _id: id, source: { $in: [...sources] } });
  if (!removed) return removeOptOut(store, key, sources, cause, now);
  if (cause.source !== "KEYWORD") await recordChange(store, changeDoc(key, "REMOVED", cause, now));
  return removed;
}

/** The last entry of a page: its creation time (ms) and number. */
export type OptOutCursor = [createTimeMs: number, number: string];

/** One page of the account's list, newest first; `limit + 1` read to tell whether more follow. */
export function findOptOutPage(
  store: OptOutStore,
  accountId: string,
  after: OptOutCursor | undefined,
  limit: number,
  options: FindOptions = {},
): Promise<OptOutDoc[]> {
  const query: Record<string, unknown> = { accountId };
  if (after) {
    const at = new Date(after[0]);
    query.createTime = { $lte: at };
    query.$or = [{ createTime: { $lt: at } }, { createTime: at, number: { $lt: after[1] } }];
  }
  return store.optOuts
    .find(query, { ...options, sort: { createTime: -1, number: -1 }, limit: limit + 1 })
    .toArray();
}

/** The last change of a page: its time (ms) and id. */
export type ChangeCursor = [atMs: number, id: string];

/** One page of the account's changes (of one number when given), newest first. */
export function findChangePage(
  store: OptOutStore,
  accountId: string,
  number: string | undefined,
  after: ChangeCursor | undefined,
  limit: number,
  options: FindOptions = {},
): Promise<OptOutChangeDoc[]> {
  const query: Record<string, unknown> = { accountId };
  if (number !== undefined) query.number = canonicalNumber(number);
  if (after) {
    const at = new Date(after[0]);
    query.at = { $lte: at };
    query.$or = [{ at: { $lt: at } }, { at, _id: { $lt: after[1] } }];
  }
  return store.changes
    .find(query, { ...options, sort: { at: -1, _id: -1 }, limit: limit + 1 })
    .toArray();
}
