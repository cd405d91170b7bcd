/**
 * Standard Webhooks signatures for the status notifications (docs/design.md "Status webhooks").
 *
 * Headers: `webhook-id` (stable per notification, so receivers can dedupe retries),
 * `webhook-timestamp` (Unix seconds of the attempt) and `webhook-signature` = `v1,` + base64
 * HMAC-SHA256 over `${id}.${timestamp}.${pathAndQuery}`. The notifications are GET requests without a
 * body, so the request's path and query (as in the request line, e.g. `/hook?id=7&status=SENT`) take
 * the place of the body. An inbound message's webhook is a POST: its body is signed, as Standard
 * Webhooks has it. The key is the base64-decoded part of the account's `whsec_...` secret.
 */

import { createHmac, createSecretKey } from "node:crypto";
import { sameSecret, WEBHOOK_SECRET_PREFIX } from "../domain/credentials.ts";
import { cachePerKey } from "./per-key-cache.ts";

/** The HMAC key of a Standard Webhooks secret (`whsec_<base64>`; the prefix is optional). */
export function webhookSecretKey(secret: string): Buffer {
  const encoded = secret.startsWith(WEBHOOK_SECRET_PREFIX)
    ? secret.slice(WEBHOOK_SECRET_PREFIX.length)
    : secret;
  const key = Buffer.from(encoded, "base64");
  if (key.length === 0) throw new RangeError("empty webhook secret");
  return key;
}

/**
 * The HMAC key of a secret, made once per account (at most 10000 kept): Node prepares a Buffer key
 * anew for every HMAC (about 20 µs, two thirds of a webhook's signing in the figure 10 profile), a
 * KeyObject only once.
 */
const hmacKey = cachePerKey(10_000, (secret) => createSecretKey(webhookSecretKey(secret)));

/** `v1,<base64 signature>` over `${id}.${timestamp}.${pathAndQuery}`. */
export function signWebhook(
  secret: string,
  id: string,
  timestamp: number,
  pathAndQuery: string,
): string {
  const mac = createHmac("sha256", hmacKey(secret))
    .update(`${id}.${timestamp}.${pathAndQuery}`)
    .digest("base64");
  return `v1,${mac}`;
}

export interface WebhookHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/**
 * The three headers of one attempt. With several secrets (the new one first, then the one it
 * replaced, during a rotation's overlap) the signature header holds one `v1,` signature of each,
 * space-separated, as Standard Webhooks has it: a receiver with either secret verifies.
 */
export function webhookHeaders(
  secret: string | readonly string[],
  id: string,
  pathAndQuery: string,
  now: Date = new Date(),
): WebhookHeaders {
  const timestamp = Math.floor(now.getTime() / 1000);
  const secrets = typeof secret === "string" ? [secret] : secret;
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": secrets
      .map((one) => signWebhook(one, id, timestamp, pathAndQuery))
      .join(" "),
  };
}

/** Default of SMS_WEBHOOK_SECRET_OVERLAP: how long the replaced secret keeps signing. */
export const DEFAULT_SECRET_OVERLAP_MS = 24 * 3600_000;

/**
 * The secrets an account's webhooks are signed with now: its secret, and for `overlapMs` after a
 * rotation (accounts/webhook-secrets.ts) the one it replaced.
 */
export function signingSecrets(
  account: {
    webhookSecret?: string | undefined;
    previousWebhookSecret?: string | undefined;
    webhookSecretRotatedAt?: Date | undefined;
  },
  overlapMs: number,
  now: Date,
): string[] {
  if (!account.webhookSecret) return [];
  const rotatedAt = account.webhookSecretRotatedAt?.getTime();
  const overlapping =
    account.previousWebhookSecret !== undefined &&
    rotatedAt !== undefined &&
    now.getTime() < rotatedAt + overlapMs;
  return overlapping
    ? [account.webhookSecret, account.previousWebhookSecret as string]
    : [account.webhookSecret];
}

export interface VerifyOptions {
  /** The account's webhook secret (`whsec_...`). */
  secret: string;
  /** Request headers; names are matched case-insensitively, array values use the first entry. */
  headers: Record<string, string | string[] | undefined>;
  /** The request's path and query exactly as received (Node's `req.url`). */
  pathAndQuery: string;
  /** Largest accepted distance between the timestamp and now; default 5 minutes. */
  toleranceSeconds?: number;
  now?: Date;
}

function header(headers: VerifyOptions["headers"], name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

/**
 * True when one of the `v1,` signatures of the `webhook-signature` header (space-separated, as
 * Standard Webhooks allows during secret rotation) matches and the timestamp is within tolerance.
 */
export function verifyWebhookSignature(options: VerifyOptions): boolean {
  const id = header(options.headers, "webhook-id");
  const timestampText = header(options.headers, "webhook-timestamp");
  const signatures = header(options.headers, "webhook-signature");
  if (!id || !timestampText || !signatures || !/^\d+$/.test(timestampText)) return false;
  const timestamp = Number(timestampText);
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  if (Math.abs(nowSeconds - timestamp) > (options.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(
    signWebhook(options.secret, id, timestamp, options.pathAndQuery).slice(3),
    "base64",
  );
  for (const candidate of signatures.split(" ")) {
    const [version, value] = candidate.split(",", 2);
    if (version !== "v1" || !value) continue;
    const given = Buffer.from(value, "base64");
    if (sameSecret(given, expected)) return true;
  }
  return false;
}
