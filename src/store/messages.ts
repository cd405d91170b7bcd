import type { Collection } from "mongodb";
import type { MessageDoc, SegmentDoc } from "./documents.ts";

export interface NewMessage {
  id: number;
  accountId: string;
  batchId?: number;
  to: string;
  from: string;
  text: string;
  segments?: SegmentDoc[];
  parts: number;
  ttl: number;
  statusCallback?: string;
}

/**
 * The document of a freshly accepted message: status ACCEPTED with its ACCEPTED notification
 * pending, due for delivery now. A batch's messages are built `held` so that nobody works them
 * until the batch commits (see commitBatchMessages).
 */
export function acceptedMessage(message: NewMessage, now: Date, held = false): MessageDoc {
  const doc: MessageDoc = {
    _id: message.id,
    accountId: message.accountId,
    to: message.to,
    from: message.from,
    text: message.text,
    parts: message.parts,
    ttl: message.ttl,
    status: "ACCEPTED",
    createdAt: now,
    updatedAt: now,
    expiresAt: new Date(now.getTime() + message.ttl * 1000),
    notifications: [{ status: "ACCEPTED", state: "pending", createdAt: now, attempts: [] }],
  };
  if (message.batchId !== undefined) doc.batchId = message.batchId;
  if (message.segments) doc.segments = message.segments;
  if (message.statusCallback !== undefined) doc.statusCallback = message.statusCallback;
  if (held) doc.hold = true;
  else {
    doc.notifyAt = now;
    doc.deliveryAt = now;
  }
  return doc;
}

/** Releases a stored batch's messages to the delivery worker and the notifier: one round trip. */
export async function commitBatchMessages(
  messages: Collection<MessageDoc>,
  batchId: number,
  now: Date,
): Promise<void> {
  await messages.updateMany(
    { batchId, hold: true },
    { $unset: { hold: "" }, $set: { notifyAt: now, deliveryAt: now } },
  );
}
