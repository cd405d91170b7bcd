/**
 * Receipts from the carrier (docs/design.md "Message lifecycle"): matched to their messages by the parts'
 * carrier ids, and applied as grouped status changes, each with its pending notification in the
 * same single-document update (see status-changes.ts).
 */

import type { AnyBulkWriteOperation, Collection, WithId } from "mongodb";
import type { DeliveryClass } from "../domain/delivery-priority.ts";
import type { ReasonName } from "../domain/message-status.ts";
import {
  type CarrierStatus,
  type MultipartReceipts,
  type ReceiptIdMatching,
  receiptIdForms,
} from "../domain/receipt-ids.ts";
import type { MessageDoc } from "./documents.ts";
import { changeStatus } from "./status-changes.ts";

export interface ReceiptUpdate {
  carrierId: string;
  /** Hint from the carrier: looked up by `_id` (cheap everywhere) and checked against the carrier id. */
  messageId?: number;
  status: "DELIVERED" | "DELIVERY_ERROR";
  reason?: ReasonName;
  /** What the carrier said, kept on the message with the part's id (`partReceipts`). */
  carrierStatus?: CarrierStatus;
}

/** How a carrier's receipts are matched (docs/design.md "Carrier-grade SMPP"). */
export interface ReceiptMatching {
  ids: ReceiptIdMatching;
  multipart: MultipartReceipts;
}

const EXACT_EACH: ReceiptMatching = { ids: "exact", multipart: "each" };

export interface ReceiptsResult {
  /**
   * Carrier ids to offer again later: no message has them yet, or their message is not SENT yet
   * (the receipt overtook the recording of the submission).
   */
  retry: string[];
  /** Messages whose status changed. */
  changed: number;
  /** Accounts of the messages the receipts were for (their notification lanes may have work). */
  accounts: string[];
  /** Carrier ids that match several parts awaiting a receipt in another form: dropped. */
  ambiguous: string[];
}

/**
 * Applies receipts: one lookup by carrier id, then grouped status changes. A failed part makes the
 * message DELIVERY_ERROR with the part's reason. A delivered part is added to the message's
 * `deliveredParts`; a message becomes DELIVERED once that set holds all its parts, by an update
 * filtered on the set's size that runs after the add, so whichever receipt completes the set (on any
 * instance) makes the change. Only a SENT message changes; receipts of final messages are dropped.
 */
export async function applyReceipts(
  messages: Collection<MessageDoc>,
  receipts: readonly ReceiptUpdate[],
  now: Date,
  /** The carrier the receipts came from, when the plan has several (its ids are its own). */
  carrier?: string,
  matching: ReceiptMatching = EXACT_EACH,
): Promise<ReceiptsResult> {
  if (receipts.length === 0) return { retry: [], changed: 0, accounts: [], ambiguous: [] };
  const projection = {
    _id: 1,
    accountId: 1,
    status: 1,
    carrierIds: 1,
    deliveryClass: 1,
    carrier: 1,
    deliveredParts: 1,
  } as const;
  const hinted = [
    ...new Set(receipts.flatMap((r) => (r.messageId === undefined ? [] : [r.messageId]))),
  ];
  const found =
    hinted.length > 0
      ? await messages.find({ _id: { $in: hinted } }, { projection }).toArray()
      : [];
  type Found = (typeof found)[number];
  const byId = new Map(found.map((m) => [m._id, m]));
  const byCarrierId = new Map<string, Found>();
  const index = (list: Found[]) => {
    for (const message of list) {
      // Another carrier's part may carry the same id.
      if (carrier !== undefined && message.carrier !== carrier) continue;
      for (const cid of message.carrierIds ?? []) byCarrierId.set(cid, message);
    }
  };
  index(found);
  const unhinted = [
    ...new Set(
      receipts
        .filter((r) => r.messageId === undefined && !byCarrierId.has(r.carrierId))
        .map((r) => r.carrierId),
    ),
  ];
  if (unhinted.length > 0)
    index(
      await messages
        .find(
          { carrierIds: { $in: unhinted }, ...(carrier !== undefined && { carrier }) },
          {
            projection,
          },
        )
        .toArray(),
    );
  // `auto`: an id written in another form than the part's (hex for decimal, leading zeros, case)
  // is looked up among the carrier's parts still awaiting a receipt, after the exact lookups.
  const otherForm =
    matching.ids === "auto"
      ? await matchOtherForms(
          messages,
          // A hinted receipt named its part in the id's own form: it waits for that part's record.
          receipts.filter((r) => r.messageId === undefined && !byCarrierId.has(r.carrierId)),
          carrier,
          projection,
        )
      : { found: new Map<string, { message: Found; carrierId: string }>(), ambiguous: [] };
  const retry: string[] = [];
  const perMessage = new Map<number, { message: Found; receipts: ReceiptUpdate[] }>();
  for (const given of receipts) {
    if (otherForm.ambiguous.includes(given.carrierId)) continue;
    const alias = otherForm.found.get(given.carrierId);
    // Applied under the part's own id (deliveredParts counts the parts' ids).
    const receipt = alias ? { ...given, carrierId: alias.carrierId } : given;
    const message = byCarrierId.get(receipt.carrierId) ?? alias?.message;
    if (!message) {
      // Not recorded yet: offer again. With a hint, a message past ACCEPTED that does not know this
      // carrier id has been submitted again since (after a crash); this receipt is an orphan.
      const hintedMessage =
        receipt.messageId === undefined ? undefined : byId.get(receipt.messageId);
      if (receipt.messageId === undefined || hintedMessage?.status === "ACCEPTED")
        retry.push(receipt.carrierId);
      continue;
    }
    if (message.status === "ACCEPTED") {
      retry.push(receipt.carrierId);
      continue;
    }
    if (message.status !== "SENT") continue; // final already: acknowledged, nothing to do
    const entry = perMessage.get(message._id) ?? { message, receipts: [] };
    entry.receipts.push(receipt);
    perMessage.set(message._id, entry);
  }
  // The messages' classes rank their new notifications.
  const classes = new Map<number, DeliveryClass>();
  for (const { message } of perMessage.values())
    if (message.deliveryClass) classes.set(message._id, message.deliveryClass);
  const failedByReason = new Map<ReasonName, number[]>();
  const deliveredSingle: number[] = [];
  const multiByParts = new Map<number, number[]>();
  const addParts: AnyBulkWriteOperation<MessageDoc>[] = [];
  for (const { message, receipts: mine } of perMessage.values()) {
    const failed = mine.find((r) => r.status === "DELIVERY_ERROR");
    if (failed) {
      const reason = failed.reason ?? "Undelivered";
      failedByReason.set(reason, [...(failedByReason.get(reason) ?? []), message._id]);
      continue;
    }
    const parts = message.carrierIds?.length ?? 1;
    // `any`: SENT means every part was accepted; the first final receipt of any part settles all.
    if (parts <= 1 || matching.multipart === "any") {
      deliveredSingle.push(message._id);
      continue;
    }
    addParts.push({
      updateOne: {
        filter: { _id: message._id },
        update: {
          $addToSet: { deliveredParts: { $each: [...new Set(mine.map((r) => r.carrierId))] } },
        },
      },
    });
    multiByParts.set(parts, [...(multiByParts.get(parts) ?? []), message._id]);
  }
  const finalUnset: (keyof MessageDoc)[] = ["deliveryAt", "deliveryLease"];
  // What the carrier said of each part, kept while the message is SENT (a receipt after its
  // final status changes nothing), in the same write as the delivered parts.
  for (const { message, receipts: mine } of perMessage.values()) {
    const said = mine.flatMap((r) =>
      r.carrierStatus ? [{ carrierId: r.carrierId, ...r.carrierStatus }] : [],
    );
    if (said.length === 0) continue;
    addParts.push({
      updateOne: {
        filter: { _id: message._id, status: "SENT" },
        update: { $push: { partReceipts: { $each: said } } },
      },
    });
  }
  if (addParts.length > 0) await messages.bulkWrite(addParts, { ordered: false });
  let changed = 0;
  for (const [reason, messageIds] of failedByReason) {
    changed += await changeStatus(
      messages,
      messageIds,
      ["SENT"],
      { status: "DELIVERY_ERROR", reason, unset: finalUnset },
      now,
      { classes },
    );
  }
  if (deliveredSingle.length > 0) {
    changed += await changeStatus(
      messages,
      deliveredSingle,
      ["SENT"],
      { status: "DELIVERED", unset: finalUnset },
      now,
      { classes },
    );
  }
  if (multiByParts.size > 0) {
    for (const [parts, messageIds] of multiByParts) {
      changed += await changeStatus(
        messages,
        messageIds,
        ["SENT"],
        { status: "DELIVERED", unset: finalUnset },
        now,
        {
          filter: { [`deliveredParts.${parts - 1}`]: { $exists: true } },
          stillDue: (doc) => (doc.deliveredParts?.length ?? 0) >= parts,
          classes,
        },
      );
    }
  }
  const accounts = [...new Set([...perMessage.values()].map((e) => e.message.accountId))];
  return { retry, changed, accounts, ambiguous: otherForm.ambiguous };
}

/**
 * The parts whose id is `receipts`' ids in another form, among the carrier's SENT messages and
 * their parts not yet delivered; an id that matches more than one part is `ambiguous`.
 */
async function matchOtherForms<P extends Record<string, 1>>(
  messages: Collection<MessageDoc>,
  receipts: readonly ReceiptUpdate[],
  carrier: string | undefined,
  projection: P,
) {
  type Found = WithId<MessageDoc>;
  const found = new Map<string, { message: Found; carrierId: string }>();
  const ambiguous: string[] = [];
  if (receipts.length === 0) return { found, ambiguous };
  const formsOf = new Map(receipts.map((r) => [r.carrierId, receiptIdForms(r.carrierId)]));
  const candidates = await messages
    .find(
      {
        carrierIds: { $in: [...new Set([...formsOf.values()].flat())] },
        status: "SENT",
        ...(carrier !== undefined && { carrier }),
      },
      { projection },
    )
    .toArray();
  for (const [id, forms] of formsOf) {
    const wanted = new Set(forms);
    const hits: { message: Found; carrierId: string }[] = [];
    for (const message of candidates) {
      const delivered = new Set(message.deliveredParts ?? []);
      for (const cid of message.carrierIds ?? [])
        if (wanted.has(cid) && !delivered.has(cid)) hits.push({ message, carrierId: cid });
    }
    if (hits.length === 1) found.set(id, hits[0] as { message: Found; carrierId: string });
    else if (hits.length > 1) ambiguous.push(id);
  }
  return { found, ambiguous };
}
