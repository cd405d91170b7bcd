import type { Collection, Document } from "mongodb";
import type { ChargeConfirmations } from "./charge-confirmations.ts";
import {
  accountMoney,
  type DebitResult,
  dailyLimitFilter,
  debitFilter,
  debitLanded,
  debitUpdate,
  type KnownLimit,
  settleCharge,
} from "./charges.ts";
import { Deadline, DeadlineExceeded } from "./deadline.ts";
import type { AccountDoc, MessageDoc, PendingCharge } from "./documents.ts";
import { GroupCommit } from "./group-commit.ts";
import { chargedUsage, entryOf, type MoneyCollections } from "./ledger.ts";
import { insertOutcome, OutcomeUnknown } from "./write-outcomes.ts";

// Group commit for single sends: the sends that arrive while the write is in flight are written
// together, with one debit per account (the sum, and one pending-charge record for the group, in
// one atomic update) and one insertMany for all their messages. A lone send is a group of one, so
// light load pays no wait; heavy load pays two round trips per group instead of two per message.
//
// A group is issued under the latest deadline of its sends, and its charge is stamped when it is
// issued, not when its sends were queued: no write of a charge lands later than its stamp plus the
// request deadline, which is what lets the settler decide safely (store/deadline.ts).

interface PendingWrite {
  apiKey: string;
  amountMicros: number;
  doc: MessageDoc;
  deadline: Deadline;
  /** The account's opt-out list version its send found the list empty at (opt-outs/list-reads.ts). */
  listVersion: number | undefined;
  /** The daily spend limit the send's cached account view holds (none: undefined). */
  dailyLimit: KnownLimit;
  resolve: (result: WriteResult) => void;
  reject: (error: unknown) => void;
}

interface AccountGroup {
  apiKey: string;
  writes: PendingWrite[];
  /** The group's record, once debited. */
  charge?: PendingCharge;
  /** Credit left after each charged write's own charge, by write. */
  credit: Map<PendingWrite, number>;
}

/**
 * A write's answer: "stale" when it was sent on an empty opt-out list and the list changed since
 * (nothing stored or charged; the send checks the list again).
 */
export type WriteResult = DebitResult | "stale";

const MAX_GROUP = 256;
/**
 * One group in flight: the sends that arrive meanwhile make the next group. With two, a service
 * bound by its own CPU split its waiting sends between two smaller groups, so any added cost per
 * request (metrics, tracing) shrank the groups and added commands per send, which cost more CPU:
 * figure 13 fell to 0.85 of off where one in flight gives 0.99, and off itself gains 6 %
 * (docs/decisions.md, "Sending (POST /sms, POST /sms-batch)").
 */
const MAX_IN_FLIGHT = 1;
/** Debit attempts of a group when other writers change the credit in between. */
const DEBIT_ATTEMPTS = 4;

export class MessageWriter {
  private readonly groups = new GroupCommit<PendingWrite>({
    maxInFlight: MAX_IN_FLIGHT,
    groupSize: () => MAX_GROUP,
    run: (group) => this.writeGroup(group),
  });

  private readonly accounts: Collection<AccountDoc>;

  constructor(
    private readonly money: MoneyCollections,
    private readonly messages: Collection<MessageDoc>,
    private readonly confirmations: ChargeConfirmations,
    /** The database server's clock, for the charges' stamps. */
    private readonly now: () => Date = () => new Date(),
  ) {
    this.accounts = money.accounts;
  }

  /**
   * Debits the charge and stores the message before `deadline`. "insufficient", "busy" and "stale"
   * store and charge nothing. Rejects with `OutcomeUnknown` when the message may or may not be
   * stored: its charge is then left to the settler. With `listVersion`, the debit lands only while
   * the account's opt-out list version is that one, in the same atomic update: a send that found
   * the list empty needs no read of it.
   */
  write(
    apiKey: string,
    amountMicros: number,
    doc: MessageDoc,
    deadline: Deadline,
    listVersion?: number,
    dailyLimit?: KnownLimit,
  ): Promise<WriteResult> {
    return new Promise((resolve, reject) => {
      this.groups.push({
        apiKey,
        amountMicros,
        doc,
        deadline,
        listVersion,
        dailyLimit,
        resolve,
        reject,
      });
    });
  }

  private async writeGroup(queued: PendingWrite[]): Promise<void> {
    // Sends whose requests ran out of time while queued are refused before anything is charged.
    const group: PendingWrite[] = [];
    for (const write of queued) {
      if (write.deadline.expired) write.reject(new DeadlineExceeded());
      else group.push(write);
    }
    if (group.length === 0) return;
    const deadline = new Deadline(Math.max(...group.map((w) => w.deadline.at)));
    try {
      await this.debitAndInsert(group, deadline);
    } finally {
      deadline.dispose();
    }
  }

  private async debitAndInsert(group: PendingWrite[], deadline: Deadline): Promise<void> {
    const at = this.now();
    const byAccount = new Map<string, AccountGroup>();
    for (const write of group) {
      const entry = byAccount.get(write.apiKey);
      if (entry) entry.writes.push(write);
      else
        byAccount.set(write.apiKey, { apiKey: write.apiKey, writes: [write], credit: new Map() });
    }
    await Promise.all(
      [...byAccount.values()].map(async (account) => {
        try {
          await this.debitAll(account, at, deadline);
        } catch (error) {
          // The debit itself may have landed: its record, if any, is left to the settler.
          for (const write of account.writes) write.reject(new OutcomeUnknown(error));
        }
      }),
    );
    const charged = [...byAccount.values()].filter((a) => a.charge);
    const docs = charged.flatMap((a) => [...a.credit.keys()].map((w) => w.doc));
    if (docs.length === 0) return;

    let failure: unknown;
    try {
      await this.messages.insertMany(docs, { ordered: false, ...deadline.options() });
    } catch (error) {
      failure = error;
    }
    const outcome = failure === undefined ? undefined : insertOutcome(failure, docs.length);
    const refused = new Set(outcome ? [...outcome.refused].map((i) => docs[i]?._id) : []);
    for (const account of charged) {
      const charge = account.charge as PendingCharge;
      if (outcome && !outcome.othersStored) {
        // Unknown: stored or not, possibly later still. The settler decides past the cutoff.
        for (const write of account.credit.keys()) write.reject(new OutcomeUnknown(failure));
        continue;
      }
      let refundMicros = 0;
      const stored: PendingWrite[] = [];
      for (const [write, creditMicros] of account.credit) {
        if (refused.has(write.doc._id)) {
          refundMicros += write.amountMicros;
          write.reject(failure);
        } else {
          stored.push(write);
          write.resolve({ creditMicros });
        }
      }
      const usage = stored.map(({ doc, amountMicros }) =>
        chargedUsage({
          createdAt: doc.createdAt,
          country: doc.country,
          parts: doc.parts,
          amountMicros,
        }),
      );
      // With sends waiting for the next group, its confirmation may go with theirs.
      if (refundMicros === 0)
        this.confirmations.add(account.apiKey, charge, usage, this.groups.waitingCount > 0);
      else {
        // Some were refused by the server: certain, so settled now (else by the settler, alike).
        const entry = entryOf(account.apiKey, charge, refundMicros - charge.amountMicros, {
          messageIds: stored.map((w) => w.doc._id),
        });
        await settleCharge(this.money, account.apiKey, charge, refundMicros, {
          record: { entry, usage },
        }).catch(() => undefined);
      }
    }
  }

  /**
   * One debit for all of an account's writes when the credit covers them all, each answered with
   * the credit left after its own charge in queue order; otherwise for those the credit covers,
   * in queue order, as one debit still.
   */
  private async debitAll(account: AccountGroup, at: Date, deadline: Deadline): Promise<void> {
    const { apiKey } = account;
    // One list version per debit: the newest the group's sends saw; a send that saw an older one
    // is stale already.
    let listVersion = newestListVersion(account.writes);
    let writes = account.writes.filter((write) => {
      if (write.listVersion === undefined || write.listVersion === listVersion) return true;
      write.resolve("stale");
      return false;
    });
    let chosen = writes;
    // The first attempt trusts the cached limit; the debit's filter holds it to the stored one.
    let dailyLimit = writes[0]?.dailyLimit;
    let overLimit = new Set<PendingWrite>();
    for (let attempt = 0; attempt < DEBIT_ATTEMPTS; attempt++) {
      if (attempt > 0) {
        const current = await accountMoney(this.accounts, apiKey, at, deadline.options());
        if (current.full) return answerAll(writes, "busy");
        if (listVersion !== undefined && current.listVersion !== listVersion) {
          // The list changed since those sends read it: they check it again.
          for (const write of writes) if (write.listVersion !== undefined) write.resolve("stale");
          writes = writes.filter((write) => write.listVersion === undefined);
          listVersion = undefined;
        }
        dailyLimit = current.dailyLimit;
        const room =
          dailyLimit === undefined ? Number.POSITIVE_INFINITY : dailyLimit - current.spentToday;
        ({ chosen, overLimit } = covered(writes, current.creditMicros, room));
      }
      if (chosen.length === 0) {
        for (const write of writes)
          write.resolve(overLimit.has(write) ? "over_daily_limit" : "insufficient");
        return;
      }
      const first = chosen[0] as PendingWrite;
      const charge: PendingCharge = {
        ref: first.doc._id,
        kind: "message",
        amountMicros: chosen.reduce((sum, w) => sum + w.amountMicros, 0),
        at,
        ...(chosen.length > 1 && {
          messages: chosen.map((w) => ({ id: w.doc._id, amountMicros: w.amountMicros })),
        }),
      };
      const updated =
        (await this.accounts.findOneAndUpdate(
          {
            ...debitFilter(apiKey, charge),
            ...listVersionFilter(listVersion),
            ...dailyLimitFilter(charge, dailyLimit),
          },
          debitUpdate(charge),
          { returnDocument: "after", projection: { creditMicros: 1 }, ...deadline.options() },
        )) ?? (await debitLanded(this.accounts, apiKey, charge, deadline.options()));
      if (!updated) continue;
      account.charge = charge;
      let after = updated.creditMicros + charge.amountMicros;
      for (const write of chosen) {
        after -= write.amountMicros;
        account.credit.set(write, after);
      }
      for (const write of writes)
        if (!account.credit.has(write))
          write.resolve(overLimit.has(write) ? "over_daily_limit" : "insufficient");
      return;
    }
    // The credit kept changing under us: nothing charged, the client may retry.
    answerAll(writes, "busy");
  }
}

/**
 * The writes `creditMicros` and the day's spend `room` cover, in queue order, and those left out
 * by the room alone (refused for the daily limit, not for credit).
 */
function covered(
  writes: PendingWrite[],
  creditMicros: number,
  room: number,
): { chosen: PendingWrite[]; overLimit: Set<PendingWrite> } {
  let credit = creditMicros;
  let left = room;
  const overLimit = new Set<PendingWrite>();
  const chosen = writes.filter((write) => {
    if (write.amountMicros > credit) return false;
    if (write.amountMicros > left) {
      overLimit.add(write);
      return false;
    }
    credit -= write.amountMicros;
    left -= write.amountMicros;
    return true;
  });
  return { chosen, overLimit };
}

/** The debit's condition on the account's opt-out list version; none without one. */
function listVersionFilter(listVersion: number | undefined): Document {
  if (listVersion === undefined) return {};
  // Accounts whose list never changed have no version field.
  return { optOutsVersion: listVersion === 0 ? { $in: [0, null] } : listVersion };
}

function newestListVersion(writes: readonly PendingWrite[]): number | undefined {
  let newest: number | undefined;
  for (const { listVersion } of writes) {
    if (listVersion !== undefined && (newest === undefined || listVersion > newest))
      newest = listVersion;
  }
  return newest;
}

function answerAll(writes: PendingWrite[], result: "busy" | "insufficient"): void {
  for (const write of writes) write.resolve(result);
}
