import type { Collection } from "mongodb";
import { withdrawMessages } from "../opt-outs/withdrawals.ts";
import type { MessageDoc } from "../store/documents.ts";
import type { MoneyCollections } from "../store/ledger.ts";

// The messages of suspended and closed accounts (docs/design.md "Accounts, API keys and the
// operator console"). The delivery worker asks `held` before each lane's claim (one read of every
// held account per `refreshMs` and instance, so a suspension holds everywhere within that time),
// and gives a held lane's turn to `heldTurn`: a closed account's accepted messages are withdrawn
// and refunded, a suspended one's only once past their ttl; the rest waits for ResumeAccount.
// The worker's turn finishes a close that a crash interrupted, and withdrawals refund exactly once
// (opt-outs/withdrawals.ts).

export const CLOSED_ERROR = "the account was closed before the message was sent";
export const EXPIRED_WHILE_HELD_ERROR = "the message's ttl passed while the account was suspended";

/** Withdrawn per write: a closed account's queue is emptied in steps of this. */
const STEP = 1000;

export class HeldMessages {
  private statuses = new Map<string, "suspended" | "closed">();
  private readAt = 0;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly collections: MoneyCollections & { messages: Collection<MessageDoc> },
    private readonly options: {
      pricePerPartMicros: number;
      now: () => Date;
      refreshMs?: number;
    },
  ) {}

  /** Whether `accountId` is suspended or closed, as read at most `refreshMs` (2 s) ago. */
  held = async (accountId: string): Promise<boolean> => {
    if (Date.now() - this.readAt >= (this.options.refreshMs ?? 2000)) await this.refresh();
    return this.statuses.has(accountId);
  };

  /** Forgets what was read: the next question reads again (this instance changed a status). */
  forget(): void {
    this.readAt = 0;
  }

  heldTurn = async (accountId: string): Promise<Date | undefined> => {
    const account = await this.collections.accounts.findOne(
      { _id: accountId },
      { projection: { status: 1 } },
    );
    if (!account?.status) return new Date();
    const now = this.options.now();
    await this.withdraw(accountId, account.status, now);
    if (account.status === "closed") return undefined;
    const next = await this.collections.messages.findOne(
      { accountId, status: "ACCEPTED", deliveryAt: { $exists: true } },
      { projection: { expiresAt: 1 }, sort: { expiresAt: 1 } },
    );
    return next?.expiresAt;
  };

  /** Withdraws and refunds what must end now: everything of a closed account, else what expired. */
  async withdraw(accountId: string, status: "suspended" | "closed", now: Date): Promise<number> {
    const ending =
      status === "closed"
        ? { accountId, status: "ACCEPTED" as const, deliveryAt: { $exists: true } }
        : { accountId, status: "ACCEPTED" as const, expiresAt: { $lte: now } };
    let withdrawn = 0;
    for (;;) {
      const messages = await this.collections.messages
        .find(ending, { projection: { _id: 1, parts: 1, pricePerPartMicros: 1 }, limit: STEP })
        .toArray();
      if (messages.length === 0) return withdrawn;
      const ids = await withdrawMessages(
        this.collections,
        accountId,
        messages.map((m) => ({
          _id: m._id,
          parts: m.parts,
          ...(m.pricePerPartMicros !== undefined && { pricePerPartMicros: m.pricePerPartMicros }),
        })),
        this.options.pricePerPartMicros,
        now,
        {},
        status === "closed" ? CLOSED_ERROR : EXPIRED_WHILE_HELD_ERROR,
      );
      withdrawn += ids.length;
      // Nothing more could be withdrawn (keyword replies, or taken by the carrier meanwhile).
      if (ids.length === 0 || messages.length < STEP) return withdrawn;
    }
  }

  private refresh(): Promise<void> {
    this.reading ??= this.collections.accounts
      .find({ status: { $in: ["suspended", "closed"] } }, { projection: { _id: 1, status: 1 } })
      .toArray()
      .then((accounts) => {
        this.statuses = new Map(accounts.map((a) => [a._id, a.status as "suspended" | "closed"]));
        this.readAt = Date.now();
      })
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }
}
