import type { Collection } from "mongodb";
import type { AccountDoc } from "../store/documents.ts";
import { type ApiKeyDoc, ensureFirstKey } from "./api-keys.ts";

/**
 * Records when each key was last used, at most once a minute per key and instance, never waited
 * for: a request costs no extra write (docs/design.md "Accounts, API keys and the operator
 * console"). A first key without its document yet (api-keys.ts) is given it on its first recorded
 * use, as managing the account's keys would, so its use is kept where every key's is.
 */
export class KeyUseRecorder {
  private readonly written = new Map<string, number>();

  constructor(
    private readonly accounts: Collection<AccountDoc>,
    private readonly keys: Collection<ApiKeyDoc>,
    private readonly onError: (error: unknown) => void,
    private readonly everyMs = 60_000,
  ) {}

  note = (keyId: string): void => {
    const now = Date.now();
    const last = this.written.get(keyId);
    if (last !== undefined && now - last < this.everyMs) return;
    if (this.written.size > 250_000) this.written.clear();
    this.written.set(keyId, now);
    this.record(keyId, new Date(now)).catch(this.onError);
  };

  private async record(keyId: string, at: Date): Promise<void> {
    const use = { $max: { lastUsedAt: at } };
    const recorded = await this.keys.updateOne({ _id: keyId }, use);
    if (recorded.matchedCount > 0) return;
    // No document: an account's first key, never managed (false: not an account's id).
    if (await ensureFirstKey(this.accounts, this.keys, keyId))
      await this.keys.updateOne({ _id: keyId }, use);
  }
}
