import type { Collection, Db } from "mongodb";

// Every change the operator makes, from any door (AdminService over Connect, gRPC, the CLI, the
// console), with its time, account, detail and author (docs/design.md "Accounts, API keys and the
// operator console"). Kept for good: it is small, and it is the account's history.

export interface AuditAuthor {
  /** The door: connect, grpc, grpc-web, or console (the console's in-process calls). */
  door: string;
  /** The client's address, when known. */
  address?: string;
  /** The operator's name as the caller gave it (the console's sign-in, the CLI's --operator). */
  operator?: string;
}

export interface AuditEntry {
  at: Date;
  action: string;
  accountId?: string;
  detail: string;
  author: AuditAuthor;
}

export function auditLogCollection(db: Db): Collection<AuditEntry> {
  return db.collection<AuditEntry>("audit_log");
}

export async function ensureAuditIndexes(log: Collection<AuditEntry>): Promise<void> {
  await Promise.all([
    log.createIndex({ at: -1 }, { name: "recent" }),
    log.createIndex({ accountId: 1, at: -1 }, { name: "account_recent" }),
  ]);
}

export async function audit(log: Collection<AuditEntry>, entry: AuditEntry): Promise<void> {
  await log.insertOne({ ...entry });
}

/** The most recent entries, newest first; of one account when `accountId` is given. */
export function recentAudit(
  log: Collection<AuditEntry>,
  accountId: string | undefined,
  limit: number,
): Promise<AuditEntry[]> {
  return log
    .find(accountId ? { accountId } : {}, { projection: { _id: 0 } })
    .sort({ at: -1 })
    .limit(limit)
    .toArray();
}
