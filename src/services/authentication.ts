import { timingSafeEqual } from "node:crypto";
import { type ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";
import { sameSecret, secretMatches } from "../domain/credentials.ts";
import { cannotBeEmpty, errorReasonOf, unauthenticated } from "../errors/api-errors.ts";
import type { AccountDirectory, AccountView } from "./account-directory.ts";
import { asUnavailable } from "./database-deadlines.ts";

const WRONG_CREDENTIALS = "apiKey and apiSecret do not match an account";

/** The account a call's guard has authenticated already (src/services/call-guards.ts). */
export const AUTHENTICATED_ACCOUNT = createContextKey<AccountView | undefined>(undefined, {
  description: "the authenticated calling account",
});

/**
 * Credentials a door has in hand already (REST's body or query): the call carries them as they
 * are, not encoded into a Basic header that authentication would decode again (issue 43).
 */
export const PRESENTED_CREDENTIALS = createContextKey<
  { apiKey: string; apiSecret: string } | undefined
>(undefined, { description: "the caller's apiKey and apiSecret, as its door read them" });

/**
 * The calling account, from the door's PRESENTED_CREDENTIALS or else
 * `Authorization: Basic base64(apiKey:apiSecret)`.
 */
export async function authenticateAccount(
  ctx: HandlerContext,
  directory: AccountDirectory,
): Promise<AccountView> {
  const known = ctx.values.get(AUTHENTICATED_ACCOUNT);
  if (known) return known;
  const { apiKey, apiSecret } =
    ctx.values.get(PRESENTED_CREDENTIALS) ??
    basicCredentials(ctx.requestHeader.get("authorization"));
  const missing: string[] = [];
  if (!apiKey) missing.push(cannotBeEmpty("apiKey"));
  if (!apiSecret) missing.push(cannotBeEmpty("apiSecret"));
  // UNAUTHENTICATED, as generic auth interceptors expect; REST's schemas refuse missing
  // credentials with a 400 before any call, so REST never gets this.
  if (missing.length > 0) throw unauthenticated(missing.join("; "), "CREDENTIALS_MISSING");
  // A database that cannot answer is UNAVAILABLE (503), on every door and before any handler.
  const account = await directory.get(apiKey).catch((error: unknown) => {
    throw asUnavailable(error);
  });
  if (!account || !verifiedSecret(account, apiSecret)) {
    throw unauthenticated(WRONG_CREDENTIALS);
  }
  const refusal = keyRefusal(account, Date.now());
  if (refusal) throw refusal;
  return account;
}

/**
 * Why a key whose secret matched may no longer be used: revoked (a closed account's keys all are)
 * or expired. Undefined while it may. Checked on every call against the cached view, so an expiry
 * holds to the second and a revocation within the directory's cache time.
 */
export function keyRefusal(account: AccountView, now: number): ConnectError | undefined {
  if (account.key.revoked || account.status === "closed") {
    return unauthenticated("this API key was revoked", "API_KEY_REVOKED");
  }
  if (account.key.expireAt && account.key.expireAt.getTime() <= now) {
    return unauthenticated("this API key has expired", "API_KEY_EXPIRED");
  }
  return undefined;
}

/**
 * Refusals of a key whose secret matched: not a guess at credentials, so they do not count toward
 * the address's failed-authentication limit (a fleet still using a revoked key must not lock out
 * its own address).
 */
export function isKnownKeyRefusal(error: ConnectError): boolean {
  const reason = errorReasonOf(error);
  return reason === "API_KEY_REVOKED" || reason === "API_KEY_EXPIRED";
}

/**
 * The secret last verified against each cached account view (views live as long as the
 * directory caches them, 2 s): a caller presenting it again is compared with it in constant
 * time, without a SHA-256 digest per request. Any other secret is checked against the stored hash.
 */
const VERIFIED = new WeakMap<AccountView, Buffer>();

function verifiedSecret(account: AccountView, apiSecret: string): boolean {
  const presented = Buffer.from(apiSecret, "utf8");
  const known = VERIFIED.get(account);
  // Secrets are all 43 characters: a length that differs from the verified one's tells nothing.
  if (known && known.length === presented.length && timingSafeEqual(known, presented)) return true;
  if (!secretMatches(apiSecret, account.secretHash)) return false;
  VERIFIED.set(account, presented);
  return true;
}

/** The apiKey and apiSecret of `Authorization: Basic base64(apiKey:apiSecret)`; empty if absent. */
export function basicCredentials(header: string | null): { apiKey: string; apiSecret: string } {
  const match = header?.match(/^Basic\s+([A-Za-z0-9+/=]*)\s*$/i);
  if (!match?.[1]) return { apiKey: "", apiSecret: "" };
  const decoded = base64Text(match[1]);
  const colon = decoded.indexOf(":");
  if (colon < 0) return { apiKey: decoded, apiSecret: "" };
  return { apiKey: decoded.slice(0, colon), apiSecret: decoded.slice(colon + 1) };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: ASCII's range, controls included
const ASCII = /^[\x00-\x7f]*$/;

/**
 * Base64 decoded as UTF-8 text, as Buffer decodes it. A padded base64 of ASCII text (every
 * credential we issue) through atob, about 2.5 times faster than a Buffer for a header's 90
 * characters (1.4 % of a Connect call's busy samples, which REST's credentials do not pay: issue
 * 43); anything else, where the two could differ, through a Buffer.
 */
function base64Text(encoded: string): string {
  if (encoded.length % 4 === 0) {
    try {
      const binary = atob(encoded);
      if (ASCII.test(binary)) return binary;
    } catch {
      // Not base64 as atob reads it: Buffer's more lenient reading decides.
    }
  }
  return Buffer.from(encoded, "base64").toString("utf8");
}

/** The header an account caller sends; used by the REST façade and clients. */
export function basicAuthorization(apiKey: string, apiSecret: string): string {
  return `Basic ${Buffer.from(`${apiKey}:${apiSecret}`, "utf8").toString("base64")}`;
}

/** Checks `Authorization: Bearer <SMS_ADMIN_TOKEN>` in constant time, its length included. */
export function authenticateOperator(ctx: HandlerContext, adminToken: string): void {
  const header = ctx.requestHeader.get("authorization") ?? "";
  const bearer = /^Bearer\s+/i.exec(header);
  const presented = bearer ? header.slice(bearer[0].length) : "";
  // Compared whatever the scheme, so a missing "Bearer" takes the same time as a wrong token.
  const matches = sameSecret(presented, adminToken);
  if (!matches || !bearer) {
    throw unauthenticated("operator token missing or wrong", "OPERATOR_TOKEN_INVALID");
  }
}
