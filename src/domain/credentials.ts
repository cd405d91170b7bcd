import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

// API secrets are 32 random bytes, not human passwords: a SHA-256 digest is as strong to store as
// a slow KDF would be, and keeps authentication cheap on every request.

export function newApiKey(): string {
  return randomBytes(12).toString("hex");
}

export function newApiSecret(): string {
  return randomBytes(32).toString("base64url");
}

/** The prefix of a Standard Webhooks secret (`whsec_<base64>`). */
export const WEBHOOK_SECRET_PREFIX = "whsec_";

/** A new random webhook signing secret in Standard Webhooks format (24 random bytes). */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(24).toString("base64");
}

export function hashSecret(secret: string): string {
  return `${STORED_PREFIX}${digest(secret).toString("base64")}`;
}

const STORED_PREFIX = "sha256$";

/**
 * Constant-time comparison of a presented secret with a stored hash: the presented secret's
 * SHA-256 digest against the stored one, both 32 bytes (one digest per request, not three).
 */
export function secretMatches(secret: string, storedHash: string): boolean {
  if (!storedHash.startsWith(STORED_PREFIX)) return false;
  const stored = Buffer.from(storedHash.slice(STORED_PREFIX.length), "base64");
  if (stored.length !== 32) return false;
  return timingSafeEqual(digest(secret), stored);
}

/**
 * Whether a presented secret equals the expected one, in a time that tells nothing of either: both
 * are hashed to SHA-256 digests, 32 bytes whatever their lengths, then compared in constant time.
 * There is no length check to branch on (one before `timingSafeEqual` tells a guesser the
 * secret's length). An empty expected secret matches nothing.
 */
export function sameSecret(presented: string | Buffer, expected: string | Buffer): boolean {
  const equal = timingSafeEqual(digest(presented), digest(expected));
  return equal && expected.length > 0;
}

function digest(secret: string | Buffer): Buffer {
  return createHash("sha256").update(secret).digest();
}
