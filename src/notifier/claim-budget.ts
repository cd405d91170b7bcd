/**
 * What the notifier holds claimed (status notifications and inbound webhooks alike) until each
 * outcome is recorded, in all and by account, and what its next claim round may take: claims go
 * in chunks (a good part of the pipeline free), and an account is claimed for again once a quarter
 * of its claim limit is free; an account whose work takes turns between groups (its batches,
 * receivers, retries: notify-turns.ts) once a sixteenth is, so that a group that comes due waits
 * for that much of the others' work, not for a quarter of the limit (figure 6c).
 */
export interface BudgetLimits {
  maxInFlight: number;
  chunkSize: number;
  accountClaimLimit: number;
}

export interface RoundRoom {
  limit: number;
  /** Claims the account may still take. */
  room: (accountId: string) => number;
  /** Accounts not claimed for this round. */
  skip: Set<string>;
}

export class ClaimBudget {
  private inFlight = 0;
  private readonly byAccount = new Map<string, number>();

  constructor(private readonly limits: BudgetLimits) {}

  /** Claimed documents held now. */
  get held(): number {
    return this.inFlight;
  }

  /** One more claimed notification of `accountId` is here until its outcome is recorded. */
  take(accountId: string): void {
    this.inFlight++;
    this.byAccount.set(accountId, (this.byAccount.get(accountId) ?? 0) + 1);
  }

  done(accountId: string): void {
    this.inFlight--;
    const held = (this.byAccount.get(accountId) ?? 0) - 1;
    if (held > 0) this.byAccount.set(accountId, held);
    else this.byAccount.delete(accountId);
  }

  /**
   * What a round may claim now; undefined while too little is free (a recorded outcome wakes).
   * `takesTurns`: whether an account's work takes turns between groups.
   */
  round(takesTurns: (accountId: string) => boolean = () => false): RoundRoom | undefined {
    const { maxInFlight, chunkSize, accountClaimLimit } = this.limits;
    const free = maxInFlight - this.inFlight;
    if (free <= 0 || (this.inFlight > 0 && free < Math.min(chunkSize, maxInFlight / 4)))
      return undefined;
    const skip = new Set<string>();
    const refill = Math.ceil(accountClaimLimit / 4);
    const finer = Math.ceil(accountClaimLimit / 16);
    for (const [accountId, held] of this.byAccount) {
      const free = accountClaimLimit - held;
      if (free < finer || (free < refill && !takesTurns(accountId))) skip.add(accountId);
    }
    return {
      limit: Math.min(free, chunkSize),
      room: (accountId) => accountClaimLimit - (this.byAccount.get(accountId) ?? 0),
      skip,
    };
  }
}
