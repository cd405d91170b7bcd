/**
 * Claims of due delivery steps (submission, expiry), per account lane: see scheduling/claims.ts
 * for the mechanics and scheduling/lanes.ts for the turns.
 */
import type { Collection } from "mongodb";
import type { MessageDoc } from "../store/documents.ts";
import { type ClaimOptions, claimDue } from "./scheduling/claims.ts";

export type ClaimedMessage = Pick<
  MessageDoc,
  | "_id"
  | "to"
  | "from"
  | "text"
  | "segments"
  | "parts"
  | "status"
  | "expiresAt"
  | "deliveryAt"
  | "carrierIds"
>;

/** Claims up to `limit` messages due for a delivery step (see work-queue.ts). */
export async function claimDueDeliveries(
  messages: Collection<MessageDoc>,
  options: ClaimOptions,
): Promise<ClaimedMessage[]> {
  const claimed = await claimDue<ClaimedMessage & { batchId?: number }>(
    messages,
    { due: "deliveryAt", lease: "deliveryLease" },
    CLAIMED_FIELDS,
    options,
  );
  return claimed.map(({ batchId: _batch, ...doc }) => doc);
}

const CLAIMED_FIELDS = {
  _id: 1,
  to: 1,
  from: 1,
  text: 1,
  segments: 1,
  parts: 1,
  status: 1,
  expiresAt: 1,
  deliveryAt: 1,
  carrierIds: 1,
} as const;
