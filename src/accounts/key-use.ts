import type { Collection } from "mongodb";
import type { ApiKeyDoc } from "./api-keys.ts";

/**
 * Records when each key was last used, at most once a minute per key and instance, never waited
 * for: a request costs no extra write (docs/design.md "Accounts, API keys and the operator
 * console"). A first key without its document yet (api-keys.ts) is not recorded until it has one.
 */
export class KeyUseRecorder {
  private readonly written = new Map<string, number>();

  constructor(
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
    this.keys
      .updateOne({ _id: keyId }, { $max: { lastUsedAt: new Date(now) } })
      .catch(this.onError);
  };
}
