import { Code, type ConnectError } from "@connectrpc/connect";
import type { Collection } from "mongodb";
import type { ApiKeyDoc } from "../accounts/api-keys.ts";
import type { Scope } from "../accounts/scopes.ts";
import type { RiskOverrides } from "../domain/risk-settings.ts";
import { fieldErrors } from "../errors/api-errors.ts";
import type { AccountDoc, SenderNameDoc, SpendControlsDoc } from "../store/documents.ts";
import type { NumberDoc } from "../store/numbers.ts";

export interface AccountView {
  /** The account's id (its first key), whichever key the caller presented. */
  apiKey: string;
  /** The presented key: its id, digest, scope and validity. */
  key: CallerKey;
  /** Digest of the presented key's secret. */
  secretHash: string;
  /** Set by the operator (src/accounts/account-status.ts); absent: active. */
  status?: "suspended" | "closed";
  statusReason?: string;
  statusUrl?: string;
  defaultSender?: string;
  /** Approved sender names of the account. */
  approvedSenders: ReadonlySet<string>;
  /** Approved names whose purpose is OTP: their messages are delivered first. */
  otpSenders: ReadonlySet<string>;
  /** Numbers assigned to the account (store/numbers.ts): it may send from them. */
  numbers: ReadonlySet<string>;
  /** Its quiet hours, when set (AccountService.UpdateQuietHours, quiet-hours-settings.ts). */
  quietHours?: { start: string; end: string };
  /** The account's spend controls (money/spend-controls.ts); absent: none. */
  spendControls?: SpendControlsDoc;
  /** The operator's overrides of the toll-fraud guard; absent: the carriers file's. */
  riskOverrides?: RiskOverrides;
}

export interface CallerKey {
  id: string;
  scope: Scope;
  expireAt?: Date;
  revoked: boolean;
}

/**
 * Accounts as the request path needs them (credentials, default sender, approved names), cached
 * per presented key for a short time so a send costs no account read. Changes made through this
 * instance are seen at once (`forget`); other instances see them within `ttlMs`, which is why a
 * revoked key or a suspension holds everywhere within 5 s (docs/design.md "Accounts, API keys and
 * the operator console").
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
    private readonly keys?: Collection<ApiKeyDoc>,
    private readonly ttlMs = 2000,
  ) {}

  /**
   * The account of a presented key (any of its keys), with that key's own terms, at most `ttlMs`
   * old. Past half its time a view is reloaded in the background while it is still served, so a
   * steady caller never waits for the reads; calls that find no view wait for one load together
   * (when a view expired, every call in flight read the account, its sender names and numbers).
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

  /**
   * Forgets the account `accountId` under every key it was read with (this instance). Loads in
   * flight are dropped too: one of them may be another key's of this account, older than the
   * change.
   */
  forget(accountId: string): void {
    for (const [key, entry] of this.cache) {
      if (key === accountId || entry.view?.apiKey === accountId) this.cache.delete(key);
    }
    this.loading.clear();
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
          // Room for 10000 accounts of 20 keys each: a full cache is dropped, not evicted one by one.
          if (this.cache.size > 250_000) this.cache.clear();
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

  private async load(presented: string): Promise<AccountView | null> {
    // The presented key's own document and, in the same round trip, the account it would be the
    // first key of: one trip for first keys, two for the others.
    const [keyDoc, own] = await Promise.all([
      this.keys?.findOne(
        { _id: presented },
        { projection: { accountId: 1, scope: 1, secretHash: 1, expireAt: 1, revokedAt: 1 } },
      ),
      this.loadAccount(presented),
    ]);
    const account =
      keyDoc && keyDoc.accountId !== presented ? await this.loadAccount(keyDoc.accountId) : own;
    if (!account) return null;
    const key: CallerKey = keyDoc
      ? { id: presented, scope: keyDoc.scope, revoked: keyDoc.revokedAt !== undefined }
      : { id: presented, scope: "full", revoked: false };
    if (keyDoc?.expireAt) key.expireAt = keyDoc.expireAt;
    return { ...account, key, secretHash: keyDoc?.secretHash ?? account.secretHash };
  }

  private async loadAccount(
    accountId: string,
  ): Promise<(Omit<AccountView, "key" | "secretHash"> & { secretHash: string }) | null> {
    const [account, approved, numbers] = await Promise.all([
      this.accounts.findOne(
        { _id: accountId },
        {
          projection: {
            secretHash: 1,
            statusUrl: 1,
            defaultSender: 1,
            spendControls: 1,
            riskOverrides: 1,
            status: 1,
            statusReason: 1,
            quietHours: 1,
          },
        },
      ),
      this.senderNames
        .find({ accountId, pending: false }, { projection: { name: 1, purpose: 1 } })
        .toArray(),
      this.numbers?.find({ accountId }, { projection: { _id: 1 } }).toArray() ?? [],
    ]);
    if (!account) return null;
    const view: Omit<AccountView, "key"> = {
      apiKey: accountId,
      secretHash: account.secretHash,
      approvedSenders: new Set(approved.map((s) => s.name)),
      otpSenders: new Set(approved.filter((s) => s.purpose === "OTP").map((s) => s.name)),
      numbers: new Set(numbers.map((n) => n._id)),
    };
    if (account.statusUrl) view.statusUrl = account.statusUrl;
    if (account.defaultSender) view.defaultSender = account.defaultSender;
    if (account.quietHours) view.quietHours = account.quietHours;
    if (account.spendControls) view.spendControls = account.spendControls;
    if (account.riskOverrides) view.riskOverrides = account.riskOverrides;
    if (account.status) view.status = account.status;
    if (account.statusReason) view.statusReason = account.statusReason;
    return view;
  }
}

/** The refusal of a call naming an account that is not there (gone while the call ran). */
export function noSuchAccount(): ConnectError {
  return fieldErrors(
    Code.NotFound,
    { api_key: "no such account" },
    { reason: "ACCOUNT_NOT_FOUND" },
  );
}
