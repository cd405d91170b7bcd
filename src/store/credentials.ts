import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

// API secrets are 32 random bytes, not human passwords: a SHA-256 digest is as strong to store as
// a slow KDF would be, and keeps authentication cheap on every request.

export function newApiKey(): string {
  return randomBytes(12).toString("hex");
}

export function newApiSecret(): string {
  return randomBytes(32).toString("base64url");
}

export function hashSecret(secret: string): string {
  return `sha256$${createHash("sha256").update(secret, "utf8").digest("base64")}`;
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const presented = Buffer.from(hashSecret(secret));
  const stored = Buffer.from(storedHash);
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
