import type { Collection, Db, Filter, IndexDescription } from "mongodb";
import type { OptOutType } from "../domain/opt-out-type.ts";
import type { InboundWebhookDoc, Lease } from "./documents.ts";
import { newestFirst, type TimeCursor } from "./message-listing.ts";
import { duplicateKeyIndexes } from "./write-outcomes.ts";

/**
 * Inbound (mobile-originated) messages, whole: one document per message however many parts it
 * came in (docs/design.md "Two-way messaging"). Written by the intake (src/inbound/intake.ts), read by
 * the InboundService and the dashboard.
 */
export interface InboundMessageDoc {
  /** From the `inbound` id sequence. */
  _id: number;
  /** The account that owns `to`. */
  accountId: string;
  /** The handset: E.164 with `+` when the carrier said it is international, else as sent. */
  from: string;
  /** The account's number it was sent to, as assigned (src/store/numbers.ts). */
  to: string;
  text: string;
  /** Parts it came in; for an incomplete message, the parts that came. */
  parts: number;
  /** When its last part (or, incomplete, its first) was received, on the database's clock. */
  receivedAt: Date;
  optOutType?: OptOutType;
  /** Parts were still missing after SMS_MO_REASSEMBLY_S; the text is what came. */
  incomplete?: true;
  /** Which carrier connection it came from, e.g. `smpp:smsc.example.com:2775` or `simulator`. */
  carrier: string;
  /**
   * What the carrier sent, hashed (carrier, addresses, coding, bytes; for several parts, every
   * part's): the same MO delivered again within 10 minutes finds its message by it. Removed from
   * a message once an equal MO arrives later than that, which is then a new message.
   */
  dedupeKey?: string;
  /**
   * Its webhook (src/notifier/inbound-notifications.ts), stored with it when the account had an
   * inbound URL: storing the message is queueing its webhook.
   */
  webhook?: InboundWebhookDoc;
  /** Due time of its webhook while one is to be sent; absent otherwise. Indexed. */
  notifyAt?: Date;
  /** Lease of the notifier instance sending its webhook. */
  notifyLease?: Lease;
}

/** Which of an account's inbound messages a list shows. */
export interface InboundFilter {
  accountId: string;
  from?: string;
  to?: string;
  /** Inclusive. */
  start?: Date;
  /** Exclusive. */
  end?: Date;
}

/** The last message of the previous page: its receipt time (ms) and id. */
export type InboundCursor = TimeCursor;

/** An equal MO after this long is a new message (design: "within 10 minutes ... is one message"). */
export const REDELIVERY_WINDOW_MS = 10 * 60_000;

type Named = IndexDescription & { name: string };

/** One index per leading filter, the list's order (newest first) after it. */
export const INBOUND_INDEXES: Named[] = [
  { name: "account_received", key: { accountId: 1, receivedAt: -1, _id: -1 } },
  { name: "account_from_received", key: { accountId: 1, from: 1, receivedAt: -1, _id: -1 } },
  { name: "account_to_received", key: { accountId: 1, to: 1, receivedAt: -1, _id: -1 } },
  // Sparse: a retired key is removed, and many messages may be without one.
  { name: "dedupe_key", key: { dedupeKey: 1 }, unique: true, sparse: true },
  // Webhooks, as the messages' notifications: the overdue sweep, a lane's claims, and the order
  // per (account, sender) (src/notifier/inbound-claims.ts).
  { name: "notify_due", key: { notifyAt: 1 }, sparse: true },
  { name: "account_notify_due", key: { accountId: 1, notifyAt: 1 } },
  { name: "account_from_notify_due", key: { accountId: 1, from: 1, notifyAt: 1 } },
];

export function inboundMessagesCollection(db: Db): Collection<InboundMessageDoc> {
  return db.collection<InboundMessageDoc>("inboundMessages");
}

export async function ensureInboundMessageIndexes(db: Db): Promise<void> {
  await inboundMessagesCollection(db).createIndexes(INBOUND_INDEXES);
}

/** The index a list reads: the one of its most selective filter (a sender, then a number). */
export function inboundIndexFor(filter: InboundFilter): string {
  if (filter.from !== undefined) return "account_from_received";
  if (filter.to !== undefined) return "account_to_received";
  return "account_received";
}

/** Up to `limit` + 1 messages, newest first: the extra one only tells that there is a next page. */
export function findInboundPage(
  db: Db,
  filter: InboundFilter,
  after: InboundCursor | undefined,
  limit: number,
): Promise<InboundMessageDoc[]> {
  const query: Filter<InboundMessageDoc> = { accountId: filter.accountId };
  if (filter.from !== undefined) query.from = filter.from;
  if (filter.to !== undefined) query.to = filter.to;
  Object.assign(query, newestFirst("receivedAt", filter, after));
  return inboundMessagesCollection(db)
    .find(query, {
      sort: { receivedAt: -1, _id: -1 },
      hint: inboundIndexFor(filter),
      projection: { dedupeKey: 0 },
      limit: limit + 1,
    })
    .toArray();
}

/** One of the account's inbound messages, or null (another account's is null too). */
export function getInboundMessage(
  db: Db,
  accountId: string,
  id: number,
): Promise<InboundMessageDoc | null> {
  return inboundMessagesCollection(db).findOne(
    { _id: id, accountId },
    { projection: { dedupeKey: 0 } },
  );
}

/** Messages by id, in id order (those of redelivered parts, handed to the hook again). */
export function inboundMessagesByIds(db: Db, ids: readonly number[]): Promise<InboundMessageDoc[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return inboundMessagesCollection(db)
    .find({ _id: { $in: [...ids] } }, { sort: { _id: 1 } })
    .toArray();
}

/**
 * Stores new messages, each unless an equal MO (same `dedupeKey`) was stored less than
 * REDELIVERY_WINDOW_MS before `now`; answers, for each, the message that holds it: itself, or
 * the earlier one. One unordered insert in the common case. Throws when the database does not
 * answer for every message (nothing is answered then; the carrier delivers again).
 */
export async function storeInboundMessages(
  db: Db,
  docs: readonly (InboundMessageDoc & { dedupeKey: string })[],
  now: Date,
): Promise<InboundMessageDoc[]> {
  const collection = inboundMessagesCollection(db);
  const cutoff = now.getTime() - REDELIVERY_WINDOW_MS;
  const result: InboundMessageDoc[] = [...docs];
  let pending = docs.map((_, i) => i);
  for (let round = 0; pending.length > 0; round++) {
    if (round > 3) throw new Error("inbound messages: equal keys kept colliding");
    const collided = await insertReportingDuplicates(
      collection,
      pending.map((i) => docs[i] as InboundMessageDoc),
    );
    if (collided.length === 0) break;
    const indexes = collided.map((k) => pending[k] as number);
    const keys = [...new Set(indexes.map((i) => docs[i]?.dedupeKey as string))];
    const earlier = new Map(
      (await collection.find({ dedupeKey: { $in: keys } }).toArray()).map((doc) => [
        doc.dedupeKey,
        doc,
      ]),
    );
    const retry: number[] = [];
    for (const i of indexes) {
      const key = docs[i]?.dedupeKey as string;
      const found = earlier.get(key);
      if (found && found.receivedAt.getTime() >= cutoff) {
        result[i] = found;
        continue;
      }
      // An equal MO of long ago (or one retired meanwhile): the key moves to the new message.
      if (found) {
        await collection.updateOne(
          { _id: found._id, dedupeKey: key },
          { $unset: { dedupeKey: "" } },
        );
      }
      retry.push(i);
    }
    pending = retry;
  }
  return result;
}

/** Inserts unordered; answers the positions refused as duplicates (of a key). */
async function insertReportingDuplicates(
  collection: Collection<InboundMessageDoc>,
  docs: InboundMessageDoc[],
): Promise<number[]> {
  try {
    await collection.insertMany(docs, { ordered: false });
    return [];
  } catch (error) {
    const duplicates = duplicateKeyIndexes(error);
    if (!duplicates) throw error;
    return duplicates;
  }
}
