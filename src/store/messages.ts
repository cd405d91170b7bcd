import { type DeliveryClass, deliveryRankMs } from "../domain/delivery-priority.ts";
import { type NotifyGroupOf, notifyGroupOf } from "../domain/notify-groups.ts";
import type { MessageDoc, SegmentDoc, StoredRoute } from "./documents.ts";

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
  /** The caller's own reference. */
  clientRef?: string;
  /** Not handed to a carrier before this (a time after `now`); its ttl counts from it. */
  sendAt?: Date;
  /** Held by quiet hours until this (a time after `now` and after sendAt); ttl counts from it. */
  holdUntil?: Date;
  /** Its place in the account's delivery queue (src/domain/delivery-priority.ts); by default batch or single. */
  deliveryClass?: DeliveryClass;
  /** The accepting request's trace context, when tracing is on. */
  traceContext?: MessageDoc["traceContext"];
  /** Where it goes and what a part cost (delivery/routing/routing.ts). */
  routing?: {
    route: StoredRoute;
    country: string | undefined;
    numberType: string | undefined;
    pricePerPartMicros: number;
  };
}

/**
 * The document of a freshly accepted message: status ACCEPTED with its ACCEPTED notification
 * pending, due for delivery now, ranked in its account's queue by its class. A batch's messages wait for their batch to commit (see
 * batch-commits.ts) before anyone works them. A scheduled message (`sendAt` after `now`) is due
 * at `sendAt` itself: its class's head start never makes it leave early. Its ttl counts from then.
 */
export function acceptedMessage(message: NewMessage, now: Date, shared?: SharedValues): MessageDoc {
  const deliveryClass =
    message.deliveryClass ?? (message.batchId === undefined ? "single" : "batch");
  const sendAt = later(message.sendAt, now);
  const held = later(message.holdUntil, now);
  const scheduled = held && (!sendAt || held > sendAt) ? held : sendAt;
  const start = scheduled ?? now;
  const rank = dateOf(deliveryRankMs(now.getTime(), deliveryClass), shared);
  const group = {
    accountId: message.accountId,
    batchId: message.batchId,
    deliveryClass,
    statusCallback: message.statusCallback,
  };
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
    expiresAt: dateOf(start.getTime() + message.ttl * 1000, shared),
    notifications: [{ status: "ACCEPTED", state: "pending", createdAt: now, attempts: [] }],
    notifyAt: rank,
    notifyGroup: shared ? shared.notifyGroup(group) : notifyGroupOf(group),
    deliveryAt: scheduled ?? rank,
    deliveryClass,
  };
  if (sendAt) doc.sendAt = sendAt;
  if (held && scheduled === held) doc.holdUntil = held;
  if (message.clientRef !== undefined) doc.clientRef = message.clientRef;
  if (message.batchId !== undefined) doc.batchId = message.batchId;
  if (message.segments) doc.segments = message.segments;
  if (message.statusCallback !== undefined) doc.statusCallback = message.statusCallback;
  if (message.traceContext) doc.traceContext = message.traceContext;
  const routing = message.routing;
  if (routing) {
    doc.route = routing.route;
    if (routing.country !== undefined) doc.country = routing.country;
    if (routing.numberType !== undefined) doc.numberType = routing.numberType;
    doc.pricePerPartMicros = routing.pricePerPartMicros;
  }
  return doc;
}

/** `at` when it is after `now`. */
function later(at: Date | undefined, now: Date): Date | undefined {
  return at !== undefined && at.getTime() > now.getTime() ? at : undefined;
}

function dateOf(ms: number, shared: SharedValues | undefined): Date {
  return shared ? shared.date(ms) : new Date(ms);
}

/**
 * What the documents of one batch have in common, made once for the batch and not for each of
 * its (up to 10000) messages: their dates (the ranks, the expiry) and their notification group's
 * key. The documents share these objects; nothing changes a stored document's Date in place.
 */
export class SharedValues {
  private readonly dates = new Map<number, Date>();
  private group: { of: NotifyGroupOf; key: string } | undefined;

  date(ms: number): Date {
    let date = this.dates.get(ms);
    if (date === undefined) {
      // A batch has a few instants (scheduled messages, quiet hours' holds may have more).
      if (this.dates.size >= 64) this.dates.clear();
      date = new Date(ms);
      this.dates.set(ms, date);
    }
    return date;
  }

  notifyGroup(of: NotifyGroupOf): string {
    const last = this.group;
    if (
      last &&
      last.of.accountId === of.accountId &&
      last.of.batchId === of.batchId &&
      last.of.deliveryClass === of.deliveryClass &&
      last.of.statusCallback === of.statusCallback
    )
      return last.key;
    const key = notifyGroupOf(of);
    this.group = { of, key };
    return key;
  }
}
