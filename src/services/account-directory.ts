import type { Collection } from "mongodb";
import type { RiskOverrides } from "../domain/risk-settings.ts";
import type { AccountDoc, SenderNameDoc, SpendControlsDoc } from "../store/documents.ts";
import type { NumberDoc } from "../store/numbers.ts";

export interface AccountView {
  apiKey: string;
  secretHash: string;
  statusUrl?: string;
  defaultSender?: string;
  /** Approved sender names of the account. */
  approvedSenders: ReadonlySet<string>;
  /** Approved names whose purpose is OTP: their messages are delivered first. */
  otpSenders: ReadonlySet<string>;
  /** Numbers assigned to the account (store/numbers.ts): it may send from them. */
  numbers: ReadonlySet<string>;
  /** The account's spend controls (money/spend-controls.ts); absent: none. */
  spendControls?: SpendControlsDoc;
  /** The operator's overrides of the toll-fraud guard; absent: the carriers file's. */
  riskOverrides?: RiskOverrides;
}

/**
 * Accounts as the request path needs them (credentials, default sender, approved names), cached
 * for a short time so a send costs no account read. Changes made through this instance are seen
 * at once (`forget`); other instances see them within `ttlMs`.
 */
export class AccountDirectory {
  private readonly cache = new Map<string, { view: AccountView | null; until: number }>();

  constructor(
    private readonly accounts: Collection<AccountDoc>,
    private readonly senderNames: Collection<SenderNameDoc>,
    private readonly numbers?: Collection<NumberDoc>,
    private readonly ttlMs = 2000,
  ) {}

  async get(apiKey: string): Promise<AccountView | null> {
    const now = Date.now();
    const hit = this.cache.get(apiKey);
    if (hit && hit.until > now) return hit.view;
    const view = await this.load(apiKey);
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(apiKey, { view, until: now + this.ttlMs });
    return view;
  }

  forget(apiKey: string): void {
    this.cache.delete(apiKey);
  }

  private async load(apiKey: string): Promise<AccountView | null> {
    const [account, approved, numbers] = await Promise.all([
      this.accounts.findOne(
        { _id: apiKey },
        {
          projection: {
            secretHash: 1,
            statusUrl: 1,
            defaultSender: 1,
            spendControls: 1,
            riskOverrides: 1,
          },
        },
      ),
      this.senderNames
        .find({ accountId: apiKey, pending: false }, { projection: { name: 1, purpose: 1 } })
        .toArray(),
      this.numbers?.find({ accountId: apiKey }, { projection: { _id: 1 } }).toArray() ?? [],
    ]);
    if (!account) return null;
    const view: AccountView = {
      apiKey,
      secretHash: account.secretHash,
      approvedSenders: new Set(approved.map((s) => s.name)),
      otpSenders: new Set(approved.filter((s) => s.purpose === "OTP").map((s) => s.name)),
      numbers: new Set(numbers.map((n) => n._id)),
    };
    if (account.statusUrl) view.statusUrl = account.statusUrl;
    if (account.defaultSender) view.defaultSender = account.defaultSender;
    if (account.spendControls) view.spendControls = account.spendControls;
    if (account.riskOverrides) view.riskOverrides = account.riskOverrides;
    return view;
  }
}
