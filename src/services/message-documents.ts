/**
 * The stored document of a checked message, single or in a batch (store/messages.ts has the
 * document's own rules): the ids it takes (its own, then one per part), its delivery class, the
 * route and price it was accepted at, and the trace of the request that sent it.
 */
import { deliveryClass } from "../domain/delivery-priority.ts";
import type { MessageDoc, SegmentDoc, StoredTrace } from "../store/documents.ts";
import { acceptedMessage, type SharedValues } from "../store/messages.ts";
import type { AccountView } from "./account-directory.ts";
import type { CheckedMessage, IntakePolicy } from "./message-intake.ts";

/** What a message's document takes beyond the checked message. */
export interface DocumentFields {
  /** Its first id (see `idsTaken`). */
  id: number;
  batchId?: number;
  ttl: number;
  /** Omitted when empty. */
  statusCallback: string | undefined;
  traceContext: StoredTrace | undefined;
  /** The caller's reference; omitted when absent. */
  clientRef?: string | undefined;
  /** When it is to go, if later than now. */
  sendAt?: Date | undefined;
  /** Held by quiet hours until then. */
  holdUntil?: Date | undefined;
}

/** Ids a message takes: its own, then one per part. */
export function idsTaken(message: CheckedMessage): number {
  return 1 + (message.parts?.length ?? 0);
}

/** The document of an accepted message. */
export function acceptedDocument(
  message: CheckedMessage,
  account: Pick<AccountView, "apiKey" | "otpSenders">,
  policy: IntakePolicy,
  fields: DocumentFields,
  now: Date,
  /** A batch's: what its documents share (store/messages.ts). */
  shared?: SharedValues,
): MessageDoc {
  const { id, batchId } = fields;
  // One literal, absent fields undefined (acceptedMessage leaves those out): a literal of
  // conditional spreads copied each one through a slow path, 10000 times a batch.
  return acceptedMessage(
    {
      id,
      accountId: account.apiKey,
      batchId,
      to: message.to,
      from: message.from,
      text: message.text,
      parts: message.partCount,
      ttl: fields.ttl,
      deliveryClass: deliveryClass(message.from, account.otpSenders, batchId !== undefined),
      segments: segmentDocs(message.parts, id + 1),
      statusCallback: fields.statusCallback || undefined,
      clientRef: fields.clientRef || undefined,
      sendAt: fields.sendAt,
      holdUntil: fields.holdUntil,
      traceContext: fields.traceContext,
      routing: routingOf(policy, message, id),
    },
    now,
    shared,
  );
}

/** What a message keeps of its destination: route, country, number type, price per part. */
function routingOf(policy: IntakePolicy, message: CheckedMessage, id: number) {
  const { destination } = message;
  return {
    route: policy.routing.route(destination, message.from, id),
    country: destination.country,
    numberType: destination.numberType,
    pricePerPartMicros: destination.pricePerPartMicros,
  };
}

function segmentDocs(parts: string[] | undefined, firstId: number): SegmentDoc[] | undefined {
  return parts?.map((text, i) => ({ id: firstId + i, text }));
}
