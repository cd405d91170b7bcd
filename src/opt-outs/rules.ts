/**
 * What an opt-out does (docs/design.md "Two-way messaging": "Scope and effect", "Replies"), for every door:
 * the inbound hook (a handset's STOP, START, HELP), OptOutService, AdminService and the delivery
 * worker's last check before the carrier.
 *
 * The promise: once a STOP is acknowledged to the carrier, no message of the account reaches that
 * number. Sends are refused from the moment the opt-out is stored (intake), messages accepted
 * before are withdrawn (SEND_ERROR, credit given back), and a message a worker had claimed before
 * the STOP is waited for: `applyInbound` returns, and the carrier is answered, only once no
 * message to the number is claimed and still ACCEPTED. A worker claiming later checks the list
 * after its claim (`screen`), so it sees the opt-out.
 */

import type { Filter } from "mongodb";
import type { OptOutType } from "../domain/opt-out-type.ts";
import type { Store } from "../store/database.ts";
import type { MessageDoc } from "../store/documents.ts";
import type { IdAllocator } from "../store/sequences.ts";
import { optOutTypeOf } from "./keywords.ts";
import {
  addOptOut,
  type ChangeCause,
  canonicalNumber,
  type OptOutDoc,
  type OptOutSource,
  type OptOutStore,
  optedOutAmong,
  optOutKey,
  removeOptOut,
} from "./list.ts";
import { replyToKeyword } from "./replies.ts";
import { instanceOfOwner, type StopFeed } from "./stop-feed.ts";
import { withdrawMessages } from "./withdrawals.ts";

/** What the rules read of a stored inbound message (store/inbound-messages.ts). */
export interface InboundForOptOut {
  _id: number;
  accountId: string;
  /** The handset. */
  from: string;
  /** The account's number it was sent to: replies go from it. */
  to: string;
  text: string;
  optOutType?: OptOutType;
  incomplete?: true;
}

export interface OptOutRulesDeps {
  store: Store;
  optOuts: OptOutStore;
  messageIds: IdAllocator;
  /** What a part costs: the refund of a withdrawn message. */
  pricePerPartMicros: number;
  /** Schedules queued work of the account (replies to deliver, withdrawals to notify). */
  onQueued: (accountId: string, deliveryAt: Date, acceptedAt: Date) => Promise<void> | void;
  /** How long a STOP waits for messages a worker claimed before it; default 40 s (a lease and more). */
  claimWaitMs?: number;
  /**
   * The STOPs announced to every delivering instance (stop-feed.ts): a STOP then waits only for
   * claims on instances that have not yet seen it. Without it, a STOP waits for every claim.
   */
  stops?: Pick<StopFeed, "announce" | "coveredAmong">;
  logger?: { warn(obj: unknown, msg?: string): void };
}

export class OptOutRules {
  constructor(private readonly deps: OptOutRulesDeps) {}

  /** The canonical numbers among `numbers` that the account may not send to. */
  refusedAmong(
    accountId: string,
    numbers: Iterable<string>,
    options: { maxTimeMS?: number; signal?: AbortSignal } = {},
  ): Promise<Set<string>> {
    return optedOutAmong(this.deps.optOuts, accountId, numbers, options);
  }

  /** Puts a number on the list and withdraws what is queued for it. */
  async add(
    accountId: string,
    number: string,
    cause: ChangeCause,
  ): Promise<{ optOut: OptOutDoc; changed: boolean }> {
    const key = optOutKey(accountId, number);
    const added = await addOptOut(this.deps.optOuts, key, cause, this.deps.store.clock.now());
    // After the entry is stored, and also when nothing changed (a retry after a crash in between):
    // sends that found the list empty are held to its version (opt-outs/list-reads.ts).
    await this.deps.store.accounts.updateOne({ _id: accountId }, { $inc: { optOutsVersion: 1 } });
    // Also when nothing changed: a redelivered STOP finishes what a crash cut short. Only a
    // handset's STOP waits for the messages workers hold: its acknowledgment is the promise.
    await this.withdrawQueued(accountId, key.number, cause.source === "KEYWORD");
    return added;
  }

  /** Takes a number off the list when its source is one of `sources` (see removeOptOut). */
  remove(accountId: string, number: string, sources: readonly OptOutSource[], cause: ChangeCause) {
    const now = this.deps.store.clock.now();
    return removeOptOut(this.deps.optOuts, optOutKey(accountId, number), sources, cause, now);
  }

  /**
   * The inbound hook: a STOP word opts the handset out, a START word lifts its opt-out, whoever
   * made it, and each of the three is answered once per 5 minutes. Safe to call again for the
   * same message (a redelivery): the list and its record change once, the reply is not repeated.
   */
  async applyInbound(message: InboundForOptOut): Promise<void> {
    if (message.incomplete) return;
    const type = message.optOutType ?? optOutTypeOf(message.text);
    if (!type) return;
    const cause: ChangeCause = {
      source: "KEYWORD",
      keyword: message.text.trim(),
      inboundId: message._id,
    };
    if (type === "STOP") await this.add(message.accountId, message.from, cause);
    if (type === "START") {
      await this.remove(message.accountId, message.from, ["KEYWORD", "API", "OPERATOR"], cause);
    }
    await replyToKeyword(this.deps, message, type);
  }

  /**
   * The delivery worker's check of claimed messages before they go to the carrier: those whose
   * recipient opted out are withdrawn (never a reply to an opt-out word, which confirms the block
   * it passes: not even looked up). Returns their ids.
   */
  async screen(
    messages: readonly Pick<
      MessageDoc,
      "_id" | "accountId" | "to" | "parts" | "pricePerPartMicros" | "keywordReply"
    >[],
  ) {
    const withdrawn = new Set<number>();
    const byAccount = new Map<string, typeof messages>();
    for (const m of messages)
      if (m.keywordReply === undefined)
        byAccount.set(m.accountId, [...(byAccount.get(m.accountId) ?? []), m]);
    for (const [accountId, own] of byAccount) {
      const refused = await this.refusedAmong(
        accountId,
        own.map((m) => m.to),
      );
      if (refused.size === 0) continue;
      const hit = own.filter((m) => refused.has(canonicalNumber(m.to)));
      const ids = await this.withdraw(accountId, hit);
      for (const id of ids) withdrawn.add(id);
    }
    return withdrawn;
  }

  /**
   * Withdraws the account's ACCEPTED messages to `number` that no worker holds, then, with `wait`,
   * waits for the ones a worker holds: they are sent or withdrawn (by the worker's screen) before
   * this returns.
   */
  private async withdrawQueued(accountId: string, number: string, wait: boolean): Promise<void> {
    const { store, stops } = this.deps;
    const until = Date.now() + (this.deps.claimWaitMs ?? 40_000);
    const recipient = { accountId, to: { $in: [number, number.slice(1)] } };
    // After the entry is stored: an instance that reads this seq also reads the list with it.
    const seq = wait && stops ? await stops.announce(accountId, number) : undefined;
    for (;;) {
      const now = store.clock.now();
      const queued = await store.messages
        .find(
          { ...recipient, status: "ACCEPTED", keywordReply: { $exists: false } },
          { projection: { _id: 1, parts: 1, pricePerPartMicros: 1, deliveryLease: 1 } },
        )
        .toArray();
      if (queued.length === 0) return;
      const free = queued.filter((m) => !m.deliveryLease || m.deliveryLease.until <= now);
      const unheld: Filter<MessageDoc> = {
        $or: [{ deliveryLease: { $exists: false } }, { "deliveryLease.until": { $lte: now } }],
      };
      if (free.length > 0) {
        await this.withdraw(accountId, free, unheld);
        continue;
      }
      if (!wait) return;
      if (seq !== undefined && stops) {
        // Claimed messages whose instance holds this STOP back are left to it: written already
        // (not to be stopped) or given back unwritten, to be withdrawn by the next claim's screen.
        const instances = [
          ...new Set(queued.map((m) => instanceOfOwner(m.deliveryLease?.owner ?? ""))),
        ];
        const covered = await stops.coveredAmong(instances, seq);
        if (covered.size === instances.length) return;
      }
      if (Date.now() > until) {
        throw new Error(
          `messages to an opted-out number are still held by a worker after ${this.deps.claimWaitMs ?? 40_000} ms`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  private async withdraw(
    accountId: string,
    messages: readonly Pick<MessageDoc, "_id" | "parts" | "pricePerPartMicros">[],
    filter: Filter<MessageDoc> = {},
  ): Promise<number[]> {
    const { store } = this.deps;
    const now = store.clock.now();
    const ids = await withdrawMessages(
      store,
      accountId,
      messages,
      this.deps.pricePerPartMicros,
      now,
      filter,
    );
    // Their SEND_ERROR webhooks are due.
    if (ids.length > 0) await this.deps.onQueued(accountId, now, now);
    return ids;
  }
}
