import type { Collection } from "mongodb";
import type { AccountDoc, SenderNameDoc } from "../store/documents.ts";
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
}

/**
 * Accounts as the request path needs them (credentials, default sender, approved names), cached
 * for a short time so a send costs no account read. Changes made through this instance are seen
 * at once (`forget`); other instances see them within `ttlMs`.
 */
export class AccountDirectory {
  private readonly cache = new Map<
    string,
    { view: AccountView | null; until: number; refreshing?: boolean }
  >();
  /** Loads in progress: the calls that miss together wait for one load (three reads). */
  private readonly loading = new Map<string, Promise<AccountView | null>>();

  constructor(
    private readonly accounts: Collection<AccountDoc>,
    private readonly senderNames: Collection<SenderNameDoc>,
    private readonly numbers?: Collection<NumberDoc>,
    private readonly ttlMs = 2000,
  ) {}

  /**
   * The account's view, at most `ttlMs` old. Past half its time a view is reloaded in the
   * background while it is still served, so a steady caller never waits for the reads; calls that
   * find no view wait for one load together (issue 43: when a view expired, every call in flight
   * read the account, its sender names and numbers again).
   */
  async get(apiKey: string): Promise<AccountView | null> {
    const now = Date.now();
    const hit = this.cache.get(apiKey);
    if (hit && hit.until > now) {
      if (!hit.refreshing && hit.until - now < this.ttlMs / 2) {
        hit.refreshing = true;
        this.reload(apiKey).catch(() => {
          hit.refreshing = false;
        });
      }
      return hit.view;
    }
    return this.reload(apiKey);
  }

  forget(apiKey: string): void {
    this.cache.delete(apiKey);
    this.loading.delete(apiKey);
  }

  private reload(apiKey: string): Promise<AccountView | null> {
    const pending = this.loading.get(apiKey);
    if (pending) return pending;
    const started = Date.now();
    const loaded = this.load(apiKey).then(
      (view) => {
        // A forget() meanwhile dropped this load: its view may be older than the change.
        if (this.loading.get(apiKey) === loaded) {
          this.loading.delete(apiKey);
          if (this.cache.size > 10_000) this.cache.clear();
          this.cache.set(apiKey, { view, until: started + this.ttlMs });
        }
        return view;
      },
      (error: unknown) => {
        if (this.loading.get(apiKey) === loaded) this.loading.delete(apiKey);
        throw error;
      },
    );
    this.loading.set(apiKey, loaded);
    return loaded;
  }

  private async load(apiKey: string): Promise<AccountView | null> {
    const [account, approved, numbers] = await Promise.all([
      this.accounts.findOne(
        { _id: apiKey },
        { projection: { secretHash: 1, statusUrl: 1, defaultSender: 1 } },
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
    return view;
  }
}
