import { createHash, randomBytes } from "node:crypto";
import type { Collection, Db, FindOptions } from "mongodb";

// The dashboard's sessions on the server (OWASP ASVS 3.3.1): the cookie names a session, and a
// session is live only while its document is here, so signing out on any instance ends it on every
// instance sharing the database, at their next page. A page costs one read by `_id`; nothing is
// cached, so an ended session is refused at once everywhere. The TTL index removes documents
// after their expiry; until its monitor runs (once a minute), the expiry in the filter refuses them.

export interface SessionDoc {
  /** SHA-256 of the session id: the database never holds what the cookie holds. */
  _id: string;
  accountId: string;
  createdAt: Date;
  expiresAt: Date;
}

export class DashboardSessions {
  constructor(
    private readonly sessions: Collection<SessionDoc>,
    /** The database server's clock: the TTL monitor compares expiry on it too. */
    private readonly now: () => Date,
  ) {}

  static open(db: Db, now: () => Date): DashboardSessions {
    return new DashboardSessions(db.collection<SessionDoc>("dashboard_sessions"), now);
  }

  async ensureIndexes(): Promise<void> {
    await Promise.all([
      this.sessions.createIndex({ expiresAt: 1 }, { name: "expiry", expireAfterSeconds: 0 }),
      // Signing out everywhere removes an account's sessions.
      this.sessions.createIndex({ accountId: 1 }, { name: "account_sessions" }),
    ]);
  }

  /** Starts a session of `accountId` that lasts `lifetimeMs`; returns its id, for the cookie. */
  async start(accountId: string, lifetimeMs: number): Promise<string> {
    const id = randomBytes(32).toString("base64url");
    const createdAt = this.now();
    await this.sessions.insertOne({
      _id: digest(id),
      accountId,
      createdAt,
      expiresAt: new Date(createdAt.getTime() + lifetimeMs),
    });
    return id;
  }

  /** True while session `id` of `accountId` has neither ended nor expired. */
  async isLive(id: string, accountId: string, options: FindOptions = {}): Promise<boolean> {
    const found = await this.sessions.findOne(
      { _id: digest(id), accountId, expiresAt: { $gt: this.now() } },
      { ...options, projection: { _id: 1 } },
    );
    return found !== null;
  }

  /** Ends session `id`; ending one that is gone already is no error. */
  async end(id: string): Promise<void> {
    await this.sessions.deleteOne({ _id: digest(id) });
  }

  /** Ends every session of `accountId`; returns how many were live or not yet removed. */
  async endAll(accountId: string): Promise<number> {
    const { deletedCount } = await this.sessions.deleteMany({ accountId });
    return deletedCount;
  }
}

function digest(id: string): string {
  return createHash("sha256").update(id).digest("base64url");
}
