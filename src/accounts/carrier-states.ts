import type { Collection, Db } from "mongodb";

// Each instance's carriers as it last saw them, written every few seconds by the instance
// (background.ts) so the operator's console shows every instance's binds from any instance.

export interface CarrierStateDoc {
  /** The instance's id. */
  _id: string;
  at: Date;
  carriers: ({ name: string; state?: string } & Record<string, unknown>)[];
}

/** Instances silent for longer than this are not shown: stopped or gone. */
export const STALE_AFTER_MS = 30_000;

export function carrierStatesCollection(db: Db): Collection<CarrierStateDoc> {
  return db.collection<CarrierStateDoc>("carrier_states");
}

export async function writeCarrierState(
  states: Collection<CarrierStateDoc>,
  doc: CarrierStateDoc,
): Promise<void> {
  await states.replaceOne({ _id: doc._id }, doc, { upsert: true });
}

export function recentCarrierStates(
  states: Collection<CarrierStateDoc>,
  now: Date,
): Promise<CarrierStateDoc[]> {
  return states
    .find({ at: { $gt: new Date(now.getTime() - STALE_AFTER_MS) } })
    .sort({ _id: 1 })
    .toArray();
}
