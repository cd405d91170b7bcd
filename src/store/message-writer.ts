import { type Collection, MongoBulkWriteError } from "mongodb";
import { type DebitResult, debit, refund } from "./charges.ts";
import type { AccountDoc, MessageDoc, PendingCharge } from "./documents.ts";

// Group commit for single sends: the sends that arrive while a write is in flight are written
// together, with one debit per account (the sum, and every pending-charge record, in one atomic
// update) and one insertMany for all their messages. A lone send is a group of one, so light load
// pays no wait; heavy load pays two round trips per group instead of two per message.

interface PendingWrite {
  apiKey: string;
  charge: PendingCharge;
  doc: MessageDoc;
  resolve: (result: DebitResult) => void;
  reject: (error: unknown) => void;
}

const MAX_GROUP = 256;
const MAX_IN_FLIGHT = 2;

export class MessageWriter {
  private queue: PendingWrite[] = [];
  private inFlight = 0;

  constructor(
    private readonly accounts: Collection<AccountDoc>,
    private readonly messages: Collection<MessageDoc>,
  ) {}

  /** Debits the charge and stores the message; "insufficient" stores and charges nothing. */
  write(apiKey: string, charge: PendingCharge, doc: MessageDoc): Promise<DebitResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ apiKey, charge, doc, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) {
      const group = this.queue.splice(0, MAX_GROUP);
      this.inFlight++;
      this.writeGroup(group).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async writeGroup(group: PendingWrite[]): Promise<void> {
    const byAccount = new Map<string, PendingWrite[]>();
    for (const write of group) {
      const list = byAccount.get(write.apiKey);
      if (list) list.push(write);
      else byAccount.set(write.apiKey, [write]);
    }
    const debited: { write: PendingWrite; creditMicros: number }[] = [];
    await Promise.all(
      [...byAccount].map(async ([apiKey, writes]) => {
        try {
          const results = await this.debitAll(apiKey, writes);
          writes.forEach((write, i) => {
            const result = results[i];
            if (result === undefined || result === "insufficient") write.resolve("insufficient");
            else debited.push({ write, creditMicros: result.creditMicros });
          });
        } catch (error) {
          for (const write of writes) write.reject(error);
        }
      }),
    );
    if (debited.length === 0) return;

    let failed = new Set<number>();
    let failure: unknown;
    try {
      await this.messages.insertMany(
        debited.map((d) => d.write.doc),
        { ordered: false },
      );
    } catch (error) {
      failure = error;
      failed =
        error instanceof MongoBulkWriteError && error.writeErrors
          ? new Set(
              (Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors]).map(
                (e) => e.index,
              ),
            )
          : new Set(debited.map((_, i) => i));
    }
    await Promise.all(
      debited.map(async ({ write, creditMicros }, i) => {
        if (!failed.has(i)) return write.resolve({ creditMicros });
        // Nothing was stored for this one: give its charge back before failing the request.
        await refund(this.accounts, write.apiKey, write.charge).catch(() => undefined);
        write.reject(failure);
      }),
    );
  }

  /**
   * One debit for all of an account's writes when the credit covers them all, each answered with
   * the credit left after its own charge in queue order; otherwise one by one, so the writes the
   * credit covers still go through.
   */
  private async debitAll(apiKey: string, writes: PendingWrite[]): Promise<DebitResult[]> {
    const first = writes[0];
    if (writes.length === 1 && first) return [await debit(this.accounts, apiKey, first.charge)];
    const charges = writes.map((w) => w.charge);
    const total = charges.reduce((sum, c) => sum + c.amountMicros, 0);
    const updated = await this.accounts.findOneAndUpdate(
      { _id: apiKey, creditMicros: { $gte: total } },
      { $inc: { creditMicros: -total }, $push: { pendingCharges: { $each: charges } } },
      { returnDocument: "after", projection: { creditMicros: 1 } },
    );
    if (!updated) {
      const results: DebitResult[] = [];
      for (const charge of charges) results.push(await debit(this.accounts, apiKey, charge));
      return results;
    }
    let after = updated.creditMicros + total;
    return charges.map((charge) => {
      after -= charge.amountMicros;
      return { creditMicros: after };
    });
  }
}
