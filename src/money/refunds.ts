/**
 * Refunds of the parts no carrier accepted (docs/design.md "Money", "What is charged"): a message
 * that ends SEND_ERROR from a carrier, or Expired while still ACCEPTED, is marked `refundDue` in
 * the same update as its final status (delivery/delivery-queue.ts), so the duty survives any
 * crash. This sweep gives the credit back, coalesced per account, in the order of
 * opt-outs/withdrawals.ts: (1) a pending refund is pushed on the account, (2) the messages still
 * marked `refundDue` are claimed for it (`refund: ref`, the mark removed), (3) it is settled: its
 * ledger entry written, then the credit of the claimed messages given back and the record
 * removed, once. A crash after (1) or (2) leaves the record to the settler; a message claimed by
 * two sweeps at once (two instances) is claimed by one only.
 */

import type { Collection } from "mongodb";
import { backgroundWriteOptions } from "../store/deadline.ts";
import type { ChargedMessage, MessageDoc } from "../store/documents.ts";
import type { MoneyCollections } from "../store/ledger.ts";
import { markUnsentRefund, pushPendingRefund, settleWithdrawal } from "../store/refunds.ts";

type Collections = MoneyCollections & { messages: Collection<MessageDoc> };

/** What a message's refund gives back: the parts no carrier accepted, at what each was charged. */
export function unsentAmount(
  message: Pick<MessageDoc, "parts" | "carrierIds" | "pricePerPartMicros" | "keywordReply">,
  defaultPricePerPartMicros: number,
): number {
  // Replies to opt-out words are never charged.
  if (message.keywordReply) return 0;
  const unsent = Math.max(0, Math.max(1, message.parts) - (message.carrierIds?.length ?? 0));
  return unsent * (message.pricePerPartMicros ?? defaultPricePerPartMicros);
}

/**
 * One sweep over up to `limit` messages marked `refundDue`. Returns how many were refunded.
 * `now` is on the server clock, which the settler's cutoff compares with.
 */
export async function refundUnsentParts(
  collections: Collections,
  now: Date,
  defaultPricePerPartMicros: number,
  limit = 1000,
): Promise<number> {
  const due = await collections.messages
    .find(
      { refundDue: true },
      {
        projection: {
          _id: 1,
          accountId: 1,
          parts: 1,
          carrierIds: 1,
          pricePerPartMicros: 1,
          keywordReply: 1,
        },
        limit,
      },
    )
    .toArray();
  const byAccount = new Map<string, typeof due>();
  for (const doc of due)
    byAccount.set(doc.accountId, [...(byAccount.get(doc.accountId) ?? []), doc]);
  let refunded = 0;
  for (const [accountId, docs] of byAccount) {
    const priced: ChargedMessage[] = [];
    const nothing: number[] = [];
    for (const doc of docs) {
      const amountMicros = unsentAmount(doc, defaultPricePerPartMicros);
      if (amountMicros > 0) priced.push({ id: doc._id, amountMicros });
      else nothing.push(doc._id);
    }
    if (nothing.length > 0) {
      await collections.messages.updateMany(
        { _id: { $in: nothing }, refundDue: true },
        { $unset: { refundDue: "" } },
        backgroundWriteOptions(),
      );
    }
    if (priced.length === 0) continue;
    refunded += (await refundMessages(collections, accountId, priced, now)).length;
  }
  return refunded;
}

/** Steps (1) to (3) for one account's messages. Returns the ids refunded. */
async function refundMessages(
  collections: Collections,
  accountId: string,
  priced: ChargedMessage[],
  now: Date,
): Promise<number[]> {
  const refund = await pushPendingRefund(collections.accounts, accountId, priced, now, {
    unsentParts: true,
  });
  await markUnsentRefund(collections.messages, refund);
  return (await settleWithdrawal(collections, accountId, refund)) ?? [];
}

/**
 * Runs the sweep every `everyMs` and when woken, one at a time; failures are reported and the
 * marks stay for the next sweep.
 */
export class UnsentPartsRefunder {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly collections: Collections,
    private readonly now: () => Date,
    private readonly defaultPricePerPartMicros: number,
    private readonly onError: (error: unknown) => void,
    private readonly everyMs = 1000,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.wake(), this.everyMs);
  }

  wake(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          // A full sweep means more may wait: go on at once.
          while (
            (await refundUnsentParts(
              this.collections,
              this.now(),
              this.defaultPricePerPartMicros,
            )) >= 1000
          );
        } catch (error) {
          this.onError(error);
        }
      } while (this.again);
      this.running = undefined;
    })();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
