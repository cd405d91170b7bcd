/**
 * Receipts that matched no part when they came (docs/design.md "Carrier-grade SMPP": "Receipts
 * that overtake"): stored, so that their `deliver_sm_resp` can go at once, and matched again
 * against the submissions recorded after them, on any instance, until they are `holdMs` old;
 * then dropped and counted (delivery/receipts.ts).
 *
 * One document per carrier and id (`_id: "<carrier>/<carrierId>"`, the carrier's name in the
 * plan, "" with one carrier): a receipt the SMSC sends again while it is kept adds nothing.
 */
import type { Collection, Db } from "mongodb";
import type { ReasonName } from "../domain/message-status.ts";
import type { CarrierStatus } from "../domain/receipt-ids.ts";

export const UNMATCHED_RECEIPTS = "unmatched_receipts";

/** A receipt as the worker applies it (delivery/carrier.ts CarrierReceipt, without the hint). */
export interface KeptReceipt {
  carrierId: string;
  status: "DELIVERED" | "DELIVERY_ERROR";
  reason?: ReasonName;
  carrierStatus?: CarrierStatus;
  at: Date;
}

export interface UnmatchedReceiptDoc {
  _id: string;
  carrier: string;
  receipt: KeptReceipt;
  /** When it was first kept (the database's clock). */
  keptAt: Date;
  /** Past this it is dropped. */
  dropAt: Date;
}

export function unmatchedReceipts(db: Db): Collection<UnmatchedReceiptDoc> {
  return db.collection<UnmatchedReceiptDoc>(UNMATCHED_RECEIPTS);
}

const idOf = (carrier: string, carrierId: string) => `${carrier}/${carrierId}`;

/** Keeps receipts that matched nothing; one already kept keeps its first version and time. */
export async function keepUnmatched(
  collection: Collection<UnmatchedReceiptDoc>,
  carrier: string,
  receipts: readonly KeptReceipt[],
  now: Date,
  holdMs: number,
): Promise<void> {
  if (receipts.length === 0) return;
  const dropAt = new Date(now.getTime() + holdMs);
  await collection.bulkWrite(
    receipts.map((receipt) => ({
      updateOne: {
        filter: { _id: idOf(carrier, receipt.carrierId) },
        update: { $setOnInsert: { carrier, receipt, keptAt: now, dropAt } },
        upsert: true,
      },
    })),
    { ordered: false },
  );
}

/** The carrier's kept receipts, oldest first, at most `limit`. */
export function keptFor(
  collection: Collection<UnmatchedReceiptDoc>,
  carrier: string,
  limit: number,
): Promise<UnmatchedReceiptDoc[]> {
  return collection.find({ carrier }, { sort: { keptAt: 1 }, limit }).toArray();
}

export async function forgetKept(
  collection: Collection<UnmatchedReceiptDoc>,
  ids: readonly string[],
): Promise<void> {
  if (ids.length > 0) await collection.deleteMany({ _id: { $in: [...ids] } });
}

export async function ensureUnmatchedReceiptIndexes(db: Db): Promise<void> {
  await unmatchedReceipts(db).createIndex({ carrier: 1, keptAt: 1 }, { name: "carrier_kept" });
}
