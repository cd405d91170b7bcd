/**
 * Claiming inbound messages' webhooks (docs/design.md "Two-way messaging": "in order per (account,
 * from)"). An inbound message stored while its account had an inbound URL carries its webhook and
 * `notifyAt`, as a message carries its status notifications, and is claimed the same way
 * (src/scheduling/claims.ts) through its account's `inbound` lane.
 *
 * Order per sender: a claimed message is sent only when every older message of its sender whose
 * webhook is still pending is in the same claim (the notifier then sends them one after the
 * other). Otherwise it waits behind the oldest such message: due again when that one is, and at
 * once when that one's webhook is delivered or given up (inbound-records.ts wakes it).
 */
import type { Collection, Filter } from "mongodb";
import { claimDue, type WorkQueue } from "../scheduling/claims.ts";
import type { InboundMessageDoc } from "../store/inbound-messages.ts";
import { NOTIFY_QUEUE } from "./claiming.ts";

/** What sending an inbound message's webhook reads of it. */
export type NotifyingInbound = Pick<
  InboundMessageDoc,
  | "_id"
  | "accountId"
  | "from"
  | "to"
  | "text"
  | "parts"
  | "receivedAt"
  | "optOutType"
  | "incomplete"
  | "webhook"
>;

/** The same fields as the status notifications' queue: `notifyAt` and `notifyLease`. */
export const INBOUND_QUEUE: WorkQueue = NOTIFY_QUEUE;

const PROJECTION: Record<string, 1> = {
  _id: 1,
  accountId: 1,
  from: 1,
  to: 1,
  text: 1,
  parts: 1,
  receivedAt: 1,
  optOutType: 1,
  incomplete: 1,
  webhook: 1,
};

/** Any due time: `notifyAt` is set (an index range, unlike `$exists`). */
const ANY_TIME = { $gte: new Date(0) };

export interface InboundClaimOptions {
  accountId: string;
  now: Date;
  limit: number;
  leaseMs: number;
  token: string;
  /** How long a message waits behind an older one of its sender that is due but not claimed. */
  deferMs: number;
}

/**
 * Claims up to `limit` of the account's due inbound webhooks; answers those that may be sent now,
 * oldest first, and puts the others back behind the older message of their sender they wait for.
 */
export async function claimInboundWebhooks(
  inbound: Collection<InboundMessageDoc>,
  options: InboundClaimOptions,
): Promise<NotifyingInbound[]> {
  const { accountId, now, token } = options;
  const claimed = await claimDue<NotifyingInbound, InboundMessageDoc>(
    inbound,
    INBOUND_QUEUE,
    PROJECTION,
    { now, limit: options.limit, leaseMs: options.leaseMs, token, filter: { accountId } },
  );
  if (claimed.length === 0) return [];
  // Pending webhooks of the same senders that this claim does not hold.
  const others = await inbound
    .find(
      {
        accountId,
        from: { $in: [...new Set(claimed.map((m) => m.from))] },
        notifyAt: ANY_TIME,
        "notifyLease.owner": { $ne: token },
      } as Filter<InboundMessageDoc>,
      { projection: { _id: 1, from: 1, receivedAt: 1, notifyAt: 1 } },
    )
    .toArray();
  const { ready, waiting } = inSenderOrder(claimed, others, now, options.deferMs);
  if (waiting.length > 0) {
    await inbound.bulkWrite(
      waiting.map(({ id, until }) => ({
        updateOne: {
          filter: { _id: id, "notifyLease.owner": token },
          update: { $set: { notifyAt: until }, $unset: { notifyLease: "" } },
        },
      })),
      { ordered: false },
    );
  }
  return ready;
}

type Ordered = Pick<InboundMessageDoc, "_id" | "receivedAt">;

/** Oldest first: by reception, then id (the messages of one intake batch share their time). */
export function receivedOrder(a: Ordered, b: Ordered): number {
  return a.receivedAt.getTime() - b.receivedAt.getTime() || a._id - b._id;
}

/**
 * Pure: of the claimed messages, those that may be sent now (no older pending message of their
 * sender outside the claim), oldest first, and those that wait, each until the due time of the
 * oldest such message (`deferMs` from now when that one is due already).
 */
export function inSenderOrder<T extends Ordered & Pick<InboundMessageDoc, "from">>(
  claimed: readonly T[],
  others: readonly (Ordered & Pick<InboundMessageDoc, "from" | "notifyAt">)[],
  now: Date,
  deferMs: number,
): { ready: T[]; waiting: { id: number; until: Date }[] } {
  const oldest = new Map<string, Ordered & Pick<InboundMessageDoc, "notifyAt">>();
  for (const other of others) {
    const known = oldest.get(other.from);
    if (!known || receivedOrder(other, known) < 0) oldest.set(other.from, other);
  }
  const ready: T[] = [];
  const waiting: { id: number; until: Date }[] = [];
  for (const message of [...claimed].sort(receivedOrder)) {
    const ahead = oldest.get(message.from);
    if (!ahead || receivedOrder(ahead, message) > 0) {
      ready.push(message);
      continue;
    }
    const due = ahead.notifyAt?.getTime() ?? 0;
    waiting.push({
      id: message._id,
      until: new Date(due > now.getTime() ? due : now.getTime() + deferMs),
    });
  }
  return { ready, waiting };
}
