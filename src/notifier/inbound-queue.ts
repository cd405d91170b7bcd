/**
 * The intake's side of the inbound webhooks (src/inbound/intake.ts `InboundWebhooks`): a new
 * inbound message of an account with an inbound URL is stored with its webhook pending and due
 * (`notifyAt`), so storing it is queueing it; once stored, its account's `inbound` lane is marked
 * due and the notifiers of this process woken. A crash between the two leaves the lane to the
 * overdue sweep (and the carrier's redelivery, which marks it again). An account without an
 * inbound URL when the message comes gets no webhook for it, as a status without a URL is skipped.
 *
 * The wake-up (`wakeNotifiers`, given by the composition root) is a hint within the process:
 * other instances find the lane by their periodic wake-up.
 */

import type { InboundWebhooks } from "../inbound/intake.ts";
import type { Logger } from "../logger.ts";
import { LaneMarker } from "../scheduling/lanes.ts";
import type { Store } from "../store/database.ts";
import type { InboundMessageDoc } from "../store/inbound-messages.ts";

export class InboundWebhookQueue implements InboundWebhooks {
  private readonly lanes: LaneMarker;

  constructor(
    private readonly store: Store,
    logger: Logger,
    private readonly wakeNotifiers: () => void = () => undefined,
  ) {
    this.lanes = new LaneMarker(store.lanes, (err) =>
      logger.warn({ err }, "marking inbound lanes failed; the overdue sweep will"),
    );
  }

  async prepare(docs: readonly InboundMessageDoc[], now: Date): Promise<void> {
    const accounts = [...new Set(docs.map((doc) => doc.accountId))];
    if (accounts.length === 0) return;
    const withUrl = new Set(
      await this.store.accounts.distinct("_id", {
        _id: { $in: accounts },
        inboundUrl: { $exists: true, $ne: "" },
      }),
    );
    for (const doc of docs) {
      if (!withUrl.has(doc.accountId)) continue;
      doc.webhook = { state: "pending", attempts: [] };
      doc.notifyAt = now;
    }
  }

  async queued(messages: readonly InboundMessageDoc[]): Promise<void> {
    let marked = false;
    for (const message of messages) {
      if (!message.notifyAt) continue;
      this.lanes.mark(message.accountId, "inbound", message.notifyAt);
      marked = true;
    }
    if (!marked) return;
    await this.lanes.flush();
    this.wakeNotifiers();
  }
}
