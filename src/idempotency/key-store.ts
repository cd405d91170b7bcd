import { randomUUID } from "node:crypto";
import { type Binary, type Collection, type Db, MongoServerError } from "mongodb";

// The idempotency keys of every instance, in MongoDB: one document per account and key, claimed
// atomically by the unique index, removed by a TTL index a day after the first request. A claim
// is `running` until its answer is stored (`done`) or it is released; a running claim older than
// `staleAfterMs` belongs to an instance that crashed and is taken over.

/** How long a key's first answer is kept and replayed (design: 24 h). */
export const KEY_LIFETIME_MS = 24 * 3600 * 1000;

/**
 * When a running claim is taken to be a crashed run's: the settler's cutoff for pending charges
 * (SMS_SETTLE_AFTER_MS, default 2 min), which no request outlives (it is at least twice the
 * longest request deadline). By then the crashed run's charge is settled too, so the retry starts
 * from a known state.
 */
export const STALE_AFTER_MS = 120_000;

export type StoredAnswer =
  | { kind: "message"; bytes: Binary | Uint8Array }
  | {
      kind: "error";
      code: number;
      message: string;
      fields: { field: string; message: string }[];
      /** ErrorInfo.reason, replayed with the error. */
      reason?: string;
    };

export interface KeyDoc {
  accountId: string;
  key: string;
  /** SHA-256 of the method and the request message: "the same request". */
  fingerprint: string;
  state: "running" | "done";
  /** Which run holds the claim; a finish or release of an older run changes nothing. */
  attempt: string;
  startedAt: Date;
  /** A day after the first request: the TTL index removes the document then. */
  expiresAt: Date;
  answer?: StoredAnswer;
}

export type Claim =
  | { kind: "claimed"; attempt: string }
  | { kind: "done"; answer: StoredAnswer }
  | { kind: "running" }
  | { kind: "mismatch" };

export class KeyStore {
  constructor(
    private readonly keys: Collection<KeyDoc>,
    /** The database server's clock (several instances compare times). */
    private readonly now: () => Date,
    private readonly staleAfterMs = STALE_AFTER_MS,
  ) {}

  static open(db: Db, now: () => Date, staleAfterMs = STALE_AFTER_MS): KeyStore {
    return new KeyStore(db.collection<KeyDoc>("idempotency_keys"), now, staleAfterMs);
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([
      this.keys.createIndex({ accountId: 1, key: 1 }, { name: "account_key", unique: true }),
      this.keys.createIndex({ expiresAt: 1 }, { name: "expiry", expireAfterSeconds: 0 }),
    ]);
  }

  /** Claims `key` for a run of the request `fingerprint`, or says what holds it. */
  async claim(accountId: string, key: string, fingerprint: string): Promise<Claim> {
    // A few rounds at most: a document that expires or is released between our insert and our
    // read is simply tried again.
    for (let round = 0; round < 3; round++) {
      const now = this.now();
      const attempt = randomUUID();
      const fresh: KeyDoc = {
        accountId,
        key,
        fingerprint,
        state: "running",
        attempt,
        startedAt: now,
        expiresAt: new Date(now.getTime() + KEY_LIFETIME_MS),
      };
      try {
        // A copy: the driver adds an `_id` to what it inserts.
        await this.keys.insertOne({ ...fresh });
        return { kind: "claimed", attempt };
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      }
      const found = await this.keys.findOne({ accountId, key });
      if (!found) continue;
      // The TTL monitor runs once a minute: a day-old key is free even before it is removed.
      if (found.expiresAt <= now) {
        if (await this.takeOver(found, fresh)) return { kind: "claimed", attempt };
        continue;
      }
      if (found.fingerprint !== fingerprint) return { kind: "mismatch" };
      if (found.state === "done" && found.answer) return { kind: "done", answer: found.answer };
      if (now.getTime() - found.startedAt.getTime() >= this.staleAfterMs) {
        const keepExpiry = { ...fresh, expiresAt: found.expiresAt };
        if (await this.takeOver(found, keepExpiry)) return { kind: "claimed", attempt };
        continue;
      }
      return { kind: "running" };
    }
    return { kind: "running" };
  }

  /** Stores the answer of the run holding the claim. */
  async finish(accountId: string, key: string, attempt: string, answer: StoredAnswer) {
    await this.keys.updateOne(
      { accountId, key, attempt, state: "running" },
      { $set: { state: "done", answer } },
    );
  }

  /** Frees the key: the run's outcome is not known, so a retry must run again. */
  async release(accountId: string, key: string, attempt: string) {
    await this.keys.deleteOne({ accountId, key, attempt, state: "running" });
  }

  /** Makes `found` the claim `next` unless another run got there first. */
  private async takeOver(found: KeyDoc, next: KeyDoc): Promise<boolean> {
    const { accountId, key, attempt } = found;
    const { fingerprint, startedAt, expiresAt } = next;
    const taken = await this.keys.updateOne(
      { accountId, key, attempt },
      {
        $set: { fingerprint, state: "running", attempt: next.attempt, startedAt, expiresAt },
        $unset: { answer: "" },
      },
    );
    return taken.modifiedCount === 1;
  }
}
