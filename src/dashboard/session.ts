import { randomBytes } from "node:crypto";
import type { CallOptions } from "@connectrpc/connect";
import secureSession from "@fastify/secure-session";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { fromAddress } from "../rate-limits/client-address.ts";
import type { AccountDirectory, AccountView } from "../services/account-directory.ts";
import { AUTHENTICATED_ACCOUNT, basicAuthorization } from "../services/authentication.ts";
import { asUnavailable } from "../services/database-deadlines.ts";

// The dashboard's session: after a sign-in the services checked, an encrypted and signed cookie
// (@fastify/secure-session) holds the apiKey and the sign-in time, never the secret. Every page
// then calls the services as that account, handing them the account the sign-in proved (the
// context value the call guards set after authenticating), so each call is still admitted by the
// address's failed-authentication limit and counted against the account's request limit.

declare module "@fastify/secure-session" {
  interface SessionData {
    apiKey: string;
    /** Epoch ms of the sign-in: the session ends a fixed time after it, however active. */
    signedInAt: number;
  }
}

export const COOKIE_NAME = "sms_dashboard";

export interface SessionSettings {
  /** 32 bytes; undefined: a random key for this process. */
  key: Buffer | undefined;
  /** Secure cookies (HTTPS only) in production. */
  production: boolean;
  minutes: number;
}

export async function registerSession(
  app: FastifyInstance,
  settings: SessionSettings,
): Promise<void> {
  await app.register(secureSession, {
    key: settings.key ?? randomBytes(32),
    cookieName: COOKIE_NAME,
    // The cookie's own lifetime; the sign-in time in it ends the session even if a browser
    // keeps the cookie longer.
    expiry: settings.minutes * 60,
    cookie: {
      path: "/dashboard",
      httpOnly: true,
      sameSite: "strict",
      secure: settings.production,
      maxAge: settings.minutes * 60,
    },
  });
}

/** The signed-in account of a request, or undefined (no session, expired, account gone). */
export async function signedInAccount(
  request: FastifyRequest,
  directory: AccountDirectory,
  minutes: number,
): Promise<AccountView | undefined> {
  const apiKey = request.session.get("apiKey");
  const signedInAt = request.session.get("signedInAt");
  if (typeof apiKey !== "string" || typeof signedInAt !== "number") return undefined;
  if (Date.now() - signedInAt > minutes * 60_000) {
    request.session.delete();
    return undefined;
  }
  // A database that cannot answer is a 503 page, as on every door.
  const account = await directory.get(apiKey).catch((error: unknown) => {
    throw asUnavailable(error);
  });
  if (!account) request.session.delete();
  return account ?? undefined;
}

/** Starts a session for `apiKey`; a new session, so nothing of a pre-sign-in cookie carries over. */
export function startSession(request: FastifyRequest, apiKey: string): void {
  request.session.regenerate();
  request.session.set("apiKey", apiKey);
  request.session.set("signedInAt", Date.now());
}

/** A service call made by the sign-in form: the credentials as any door sends them. */
export function signInCall(
  request: FastifyRequest,
  apiKey: string,
  apiSecret: string,
): CallOptions {
  return {
    headers: { authorization: basicAuthorization(apiKey, apiSecret) },
    contextValues: fromAddress(request.ip),
  };
}

/** A service call made for the signed-in `account`. */
export function sessionCall(request: FastifyRequest, account: AccountView): CallOptions {
  const contextValues = fromAddress(request.ip);
  contextValues.set(AUTHENTICATED_ACCOUNT, account);
  return { contextValues };
}
