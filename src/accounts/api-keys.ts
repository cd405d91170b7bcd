import type { Collection, Db } from "mongodb";
import { hashSecret, newApiKey, newApiSecret } from "../domain/credentials.ts";
import type { AccountDoc } from "../store/documents.ts";
import type { Scope } from "./scopes.ts";

// An account's API keys (docs/design.md "Accounts, API keys and the operator console"). The
// account's first key is its id and its first credentials (accounts.secretHash); it gets a document
// here the first time the account's keys are managed, so that it can be listed, named and deleted
// like any other. A revoked key keeps its document, marked: a request made with it is told so
// (API_KEY_REVOKED) instead of "wrong credentials", and never counts as a failed sign-in.
//
// The account's `keyCount` is the gate of MAX_KEYS. A key leaves it once, by whoever flips its
// `uncountedAt` first (a revocation, or a creation at the limit retiring expired keys), and only
// after the flip: the count may be one too high for a moment (or for good after a crash between
// the two writes), never too low, so no race makes a 21st live key.

/** At most this many keys per account, revoked and expired ones not counted. */
export const MAX_KEYS = 20;
export const KEY_NAME_MAX_CHARS = 100;
/** The name the first key is listed with until renamed: it had none. */
export const FIRST_KEY_NAME = "first key";

export interface ApiKeyDoc {
  /** The key: the user half of its credentials. */
  _id: string;
  accountId: string;
  name: string;
  scope: Scope;
  /** SHA-256 digest of the secret (domain/credentials.ts); never the secret. */
  secretHash: string;
  createdAt: Date;
  expireAt?: Date;
  /** Written at most once a minute per key and instance (key-use.ts). */
  lastUsedAt?: Date;
  revokedAt?: Date;
  /** When it stopped counting toward MAX_KEYS: revoked, or expired and retired by a creation. */
  uncountedAt?: Date;
}

export function apiKeysCollection(db: Db): Collection<ApiKeyDoc> {
  return db.collection<ApiKeyDoc>("api_keys");
}

export async function ensureApiKeyIndexes(keys: Collection<ApiKeyDoc>): Promise<void> {
  await keys.createIndex({ accountId: 1, createdAt: 1 }, { name: "account_keys" });
}

export type KeyRefusal = "limit" | "last-full" | "not-found" | "account-closed";

/**
 * Gives the account's first key its document and the account its key counters, once: both
 * conditional, so concurrent first calls agree. False when there is no such account.
 */
export async function ensureFirstKey(
  accounts: Collection<AccountDoc>,
  keys: Collection<ApiKeyDoc>,
  accountId: string,
): Promise<boolean> {
  const account = await accounts.findOne(
    { _id: accountId },
    { projection: { secretHash: 1, createdAt: 1, keyCount: 1 } },
  );
  if (!account) return false;
  if (account.keyCount !== undefined) return true;
  await keys.updateOne(
    { _id: accountId },
    {
      $setOnInsert: {
        accountId,
        name: FIRST_KEY_NAME,
        scope: "full",
        secretHash: account.secretHash,
        createdAt: account.createdAt,
      },
    },
    { upsert: true },
  );
  await accounts.updateOne(
    { _id: accountId, keyCount: { $exists: false } },
    { $set: { keyCount: 1, fullKeyCount: 1 } },
  );
  return true;
}

export interface NewKey {
  name: string;
  scope: Scope;
  expireAt?: Date;
}

/**
 * Makes a key: the account's count is raised first, only while under MAX_KEYS and not closed, so
 * two concurrent creations cannot both take the 20th place. The secret is in the answer only.
 */
export async function createApiKey(
  accounts: Collection<AccountDoc>,
  keys: Collection<ApiKeyDoc>,
  accountId: string,
  input: NewKey,
  now: Date,
): Promise<{ key: ApiKeyDoc; apiSecret: string } | KeyRefusal> {
  if (!(await ensureFirstKey(accounts, keys, accountId))) return "not-found";
  const full = input.scope === "full" ? 1 : 0;
  const count = () =>
    accounts.updateOne(
      { _id: accountId, keyCount: { $lt: MAX_KEYS }, status: { $ne: "closed" } },
      { $inc: { keyCount: 1, fullKeyCount: full } },
    );
  let counted = await count();
  // At the limit, expired keys give their places back (they stay listed), then one more try.
  if (counted.matchedCount === 0 && (await retireExpiredKeys(accounts, keys, accountId, now)) > 0)
    counted = await count();
  if (counted.matchedCount === 0) {
    const account = await accounts.findOne({ _id: accountId }, { projection: { status: 1 } });
    return account?.status === "closed" ? "account-closed" : "limit";
  }
  const apiSecret = newApiSecret();
  const key: ApiKeyDoc = {
    _id: newApiKey(),
    accountId,
    name: input.name,
    scope: input.scope,
    secretHash: hashSecret(apiSecret),
    createdAt: now,
  };
  if (input.expireAt) key.expireAt = input.expireAt;
  try {
    await keys.insertOne(key);
  } catch (error) {
    await accounts.updateOne({ _id: accountId }, { $inc: { keyCount: -1, fullKeyCount: -full } });
    throw error;
  }
  return { key, apiSecret };
}

/** The account's keys not revoked, oldest first. */
export async function listApiKeys(
  accounts: Collection<AccountDoc>,
  keys: Collection<ApiKeyDoc>,
  accountId: string,
): Promise<ApiKeyDoc[] | "not-found"> {
  if (!(await ensureFirstKey(accounts, keys, accountId))) return "not-found";
  return keys
    .find({ accountId, revokedAt: { $exists: false } }, { projection: { secretHash: 0 } })
    .sort({ createdAt: 1, _id: 1 })
    .toArray();
}

/**
 * Revokes `apiKey` of `accountId` (any account's when undefined: the operator). The `full` count
 * goes down first, only while another `full` key remains (unless `allowLastFull`), so two
 * concurrent deletions cannot both take the last one, and is given back if another request marked
 * the key first; `keyCount` goes down after the mark, by the request that marked it.
 */
export async function revokeApiKey(
  accounts: Collection<AccountDoc>,
  keys: Collection<ApiKeyDoc>,
  apiKey: string,
  accountId: string | undefined,
  now: Date,
  allowLastFull = false,
): Promise<ApiKeyDoc | KeyRefusal> {
  const owner = accountId ?? (await ownerOf(accounts, keys, apiKey));
  if (!owner || !(await ensureFirstKey(accounts, keys, owner))) return "not-found";
  const key = await keys.findOne({ _id: apiKey, accountId: owner, revokedAt: { $exists: false } });
  if (!key) return "not-found";
  const full = key.scope === "full" ? 1 : 0;
  // The last-full gate first (a full key is counted there until revoked, expired or not).
  if (full) {
    const gated = await accounts.updateOne(
      allowLastFull ? { _id: owner } : { _id: owner, fullKeyCount: { $gt: 1 } },
      { $inc: { fullKeyCount: -1 } },
    );
    if (gated.matchedCount === 0) return "last-full";
  }
  const marked = await keys.findOneAndUpdate(
    { _id: apiKey, revokedAt: { $exists: false } },
    // `$min` keeps a retirement's earlier time: one flip of `uncountedAt`, whoever made it.
    { $set: { revokedAt: now }, $min: { uncountedAt: now } },
    { projection: { secretHash: 0 }, returnDocument: "before" },
  );
  if (!marked) {
    // Another request revoked it first: its gate is given back.
    if (full) await accounts.updateOne({ _id: owner }, { $inc: { fullKeyCount: 1 } });
    return "not-found";
  }
  // Its place under MAX_KEYS, unless a creation had already retired it (expired).
  if (!marked.uncountedAt) await accounts.updateOne({ _id: owner }, { $inc: { keyCount: -1 } });
  return marked;
}

/**
 * Takes the account's expired keys out of its count, each once (the flip of `uncountedAt` decides
 * who gives its place back). They stay listed, and refused as expired. Answers how many.
 */
export async function retireExpiredKeys(
  accounts: Collection<AccountDoc>,
  keys: Collection<ApiKeyDoc>,
  accountId: string,
  now: Date,
): Promise<number> {
  const open = { revokedAt: { $exists: false }, uncountedAt: { $exists: false } };
  const expired = await keys
    .find({ accountId, ...open, expireAt: { $lte: now } }, { projection: { _id: 1 } })
    .toArray();
  let retired = 0;
  for (const { _id } of expired) {
    const flipped = await keys.updateOne({ _id, ...open }, { $set: { uncountedAt: now } });
    if (flipped.modifiedCount === 0) continue;
    await accounts.updateOne({ _id: accountId }, { $inc: { keyCount: -1 } });
    retired++;
  }
  return retired;
}

/** Revokes every key of a closed account, its first one included. */
export async function revokeEveryKey(
  accounts: Collection<AccountDoc>,
  keys: Collection<ApiKeyDoc>,
  accountId: string,
  now: Date,
): Promise<void> {
  await ensureFirstKey(accounts, keys, accountId);
  await keys.updateMany(
    { accountId, revokedAt: { $exists: false } },
    { $set: { revokedAt: now }, $min: { uncountedAt: now } },
  );
  await accounts.updateOne({ _id: accountId }, { $set: { keyCount: 0, fullKeyCount: 0 } });
}

/** The account a key belongs to: its document's, else the key itself when it is an account's id. */
async function ownerOf(
  accounts: Collection<AccountDoc>,
  keys: Collection<ApiKeyDoc>,
  apiKey: string,
): Promise<string | undefined> {
  const key = await keys.findOne({ _id: apiKey }, { projection: { accountId: 1 } });
  if (key) return key.accountId;
  const account = await accounts.countDocuments({ _id: apiKey }, { limit: 1 });
  return account ? apiKey : undefined;
}
