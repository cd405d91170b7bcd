import type { Binary, Collection, Db } from "mongodb";
import { REDELIVERY_WINDOW_MS } from "./inbound-messages.ts";
import { duplicateKeyIndexes } from "./write-outcomes.ts";

/**
 * The parts of long inbound messages, each stored before its `deliver_sm_resp` (docs/design.md "At least
 * once, never lost"), until its message is whole (or given up on) and stored in
 * `inboundMessages`. A part that made a message is kept 10 minutes more, so that the SMSC's
 * redelivery of it is recognised instead of starting a message of its own; then a TTL index
 * removes it.
 */
export interface InboundPartDoc {
  /** What was sent (src/inbound/mo-part.ts `partKey`): a redelivered part has the same. */
  _id: string;
  /** The message it belongs to (`groupKey`): carrier, addresses, reference and total. */
  group: string;
  seq: number;
  total: number;
  /** Written as a Buffer, read back as the driver's Binary: see `payloadBytes`. */
  payload: Buffer | Binary;
  dataCoding: number;
  accountId: string;
  from: string;
  /** The assigned number. */
  to: string;
  carrier: string;
  receivedAt: Date;
  /** Set until its message is stored (sparse index: the parts still waiting). */
  open?: true;
  /** The message it became part of. */
  inboundId?: number;
  /** When the TTL index removes it (set with `inboundId`). */
  expireAt?: Date;
}

export function inboundPartsCollection(db: Db): Collection<InboundPartDoc> {
  return db.collection<InboundPartDoc>("inboundParts");
}

export async function ensureInboundPartIndexes(db: Db): Promise<void> {
  await inboundPartsCollection(db).createIndexes([
    // A message's waiting parts, and the oldest waiting parts of all (the sweep).
    { name: "open_group", key: { open: 1, group: 1 }, sparse: true },
    { name: "open_received", key: { open: 1, receivedAt: 1 }, sparse: true },
    { name: "expire", key: { expireAt: 1 }, expireAfterSeconds: 0, sparse: true },
  ]);
}

/**
 * Stores parts (unordered, one write); a part already stored less than REDELIVERY_WINDOW_MS
 * before `now` is a redelivery and stays as it is, an older equal one is replaced by the new.
 * Answers the ids of those that were redeliveries. Throws when the database does not answer for
 * every part.
 */
export async function storeInboundParts(
  db: Db,
  parts: readonly InboundPartDoc[],
  now: Date,
): Promise<string[]> {
  if (parts.length === 0) return [];
  const collection = inboundPartsCollection(db);
  let duplicates: InboundPartDoc[];
  try {
    await collection.insertMany(parts as InboundPartDoc[], { ordered: false });
    return [];
  } catch (error) {
    duplicates = duplicatesOf(error, parts);
  }
  const cutoff = new Date(now.getTime() - REDELIVERY_WINDOW_MS);
  const redelivered: string[] = [];
  for (const part of duplicates) {
    // Only an equal part of long ago is replaced; a recent one is this part, delivered again.
    const result = await collection.replaceOne(
      { _id: part._id, receivedAt: { $lt: cutoff } },
      part,
    );
    if (result.matchedCount === 0) redelivered.push(part._id);
  }
  return redelivered;
}

function duplicatesOf(error: unknown, parts: readonly InboundPartDoc[]): InboundPartDoc[] {
  const duplicates = duplicateKeyIndexes(error);
  if (!duplicates) throw error;
  return duplicates.map((index) => parts[index] as InboundPartDoc);
}

/** A stored part's bytes, as written. */
export function payloadBytes(part: InboundPartDoc): Buffer {
  const payload = part.payload;
  if (Buffer.isBuffer(payload)) return payload;
  const bytes = payload.value();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The waiting parts of these messages, in the order they were received. */
export async function openParts(
  db: Db,
  groups: readonly string[],
): Promise<Map<string, InboundPartDoc[]>> {
  const byGroup = new Map<string, InboundPartDoc[]>();
  if (groups.length === 0) return byGroup;
  const docs = await inboundPartsCollection(db)
    .find({ open: true, group: { $in: [...new Set(groups)] } }, { hint: "open_group" })
    .sort({ receivedAt: 1, _id: 1 })
    .toArray();
  for (const doc of docs) {
    const list = byGroup.get(doc.group) ?? [];
    list.push(doc);
    byGroup.set(doc.group, list);
  }
  return byGroup;
}

/** The messages these parts already became (a redelivered part of a stored message). */
export async function messagesOfParts(db: Db, ids: readonly string[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const docs = await inboundPartsCollection(db)
    .find(
      { _id: { $in: [...ids] }, inboundId: { $exists: true } },
      { projection: { inboundId: 1 } },
    )
    .toArray();
  return [...new Set(docs.map((doc) => doc.inboundId as number))];
}

/** Groups with a part waiting since before `receivedBefore` (at most `limit`). */
export async function overdueGroups(
  db: Db,
  receivedBefore: Date,
  limit: number,
): Promise<string[]> {
  const docs = await inboundPartsCollection(db)
    .find(
      { open: true, receivedAt: { $lt: receivedBefore } },
      { hint: "open_received", projection: { group: 1 }, sort: { receivedAt: 1 }, limit },
    )
    .toArray();
  return [...new Set(docs.map((doc) => doc.group))];
}

/** The parts became message `inboundId` (or were repeats of its parts): kept 10 minutes more. */
export async function closeParts(
  db: Db,
  closing: readonly { ids: string[]; inboundId: number }[],
  now: Date,
): Promise<void> {
  if (closing.length === 0) return;
  const expireAt = new Date(now.getTime() + REDELIVERY_WINDOW_MS);
  await inboundPartsCollection(db).bulkWrite(
    closing.map(({ ids, inboundId }) => ({
      updateMany: {
        filter: { _id: { $in: ids } },
        update: { $set: { inboundId, expireAt }, $unset: { open: "" } },
      },
    })),
    { ordered: false },
  );
}
