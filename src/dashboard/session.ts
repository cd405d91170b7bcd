import { randomBytes } from "node:crypto";
import type { CallOptions } from "@connectrpc/connect";
import secureSession from "@fastify/secure-session";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { fromAddress } from "../rate-limits/client-address.ts";
import type { AccountDirectory, AccountView } from "../services/account-directory.ts";
import {
  AUTHENTICATED_ACCOUNT,
  basicAuthorization,
  keyRefusal,
} from "../services/authentication.ts";
import { COUNTED_REQUEST } from "../services/call-guards.ts";
import { asUnavailable } from "../services/database-deadlines.ts";
import type { DashboardSessions } from "../store/dashboard-sessions.ts";

// The dashboard's session: after a sign-in the services checked, an encrypted and signed cookie
// (@fastify/secure-session) holds the apiKey, the sign-in time and the id of the session kept on
// the server (store/dashboard-sessions.ts), never the secret; signing out removes the server's
// session, so a copy of the cookie is refused on every instance from then on. Every page
// then calls the services as that account, handing them the account the sign-in proved (the
// context value the call guards set after authenticating), so each call is still admitted by the
// address's failed-authentication limit; the page itself is counted against the account's request
// limit once, like a REST request.

declare module "@fastify/secure-session" {
  interface SessionData {
    apiKey: string;
    /** Epoch ms of the sign-in: the session ends a fixed time after it, however active. */
    signedInAt: number;
    /** The server's session: live while its document is there. */
    sessionId: string;
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

/** What a session check reads: the dashboard's deps have all of it. */
export interface SessionDeps {
  sessions: DashboardSessions;
  directory: AccountDirectory;
  config: { dashboardSessionMinutes: number; requestTimeoutMs: number };
}

/**
 * The signed-in account of a request, or undefined (no session, expired, signed out, account
 * gone): one read of the server's session, beside the account directory's (cached) read.
 */
export async function signedInAccount(
  request: FastifyRequest,
  { sessions, directory, config }: SessionDeps,
): Promise<AccountView | undefined> {
  const apiKey = request.session.get("apiKey");
  const signedInAt = request.session.get("signedInAt");
  const sessionId = request.session.get("sessionId");
  if (
    typeof apiKey !== "string" ||
    typeof signedInAt !== "number" ||
    typeof sessionId !== "string"
  ) {
    return undefined;
  }
  if (Date.now() - signedInAt > config.dashboardSessionMinutes * 60_000) {
    request.session.delete();
    return undefined;
  }
  // A database that cannot answer is a 503 page, as on every door. The cookie holds the key
  // signed in with (any of the account's keys); the server's session is the account's.
  const account = await unavailableOnFailure(() => directory.get(apiKey));
  const live =
    account !== null &&
    // A revoked or expired key (a closed account's) ends its sessions at their next page.
    keyRefusal(account, Date.now()) === undefined &&
    (await unavailableOnFailure(() =>
      sessions.isLive(sessionId, account.apiKey, { maxTimeMS: config.requestTimeoutMs }),
    ));
  if (!live || !account) {
    request.session.delete();
    return undefined;
  }
  return account;
}

/**
 * Starts a session for `apiKey`: on the server, then in a new cookie, so nothing of a pre-sign-in
 * cookie carries over. A session the browser had already is ended.
 */
export async function startSession(
  request: FastifyRequest,
  apiKey: string,
  { sessions, config, directory }: SessionDeps,
): Promise<void> {
  const previous = request.session.get("sessionId");
  const sessionId = await unavailableOnFailure(async () => {
    if (typeof previous === "string") await sessions.end(previous);
    // Kept under the account, whichever of its keys signed in: "sign out everywhere" ends all.
    const accountId = (await directory.get(apiKey))?.apiKey ?? apiKey;
    return sessions.start(accountId, config.dashboardSessionMinutes * 60_000);
  });
  request.session.regenerate();
  request.session.set("apiKey", apiKey);
  request.session.set("signedInAt", Date.now());
  request.session.set("sessionId", sessionId);
}

/**
 * Ends the request's session on the server, then clears the cookie. When the database cannot
 * answer, the cookie is kept (a 503 page): the browser can sign out again, and the session is not
 * shown as ended while a copy of the cookie would still open pages.
 */
export async function endSession(request: FastifyRequest, { sessions }: SessionDeps) {
  const sessionId = request.session.get("sessionId");
  if (typeof sessionId === "string") await unavailableOnFailure(() => sessions.end(sessionId));
  request.session.delete();
}

/** Ends every session of `account` on every instance, this browser's too. */
export async function endEverySession(
  request: FastifyRequest,
  account: AccountView,
  { sessions }: SessionDeps,
): Promise<void> {
  await unavailableOnFailure(() => sessions.endAll(account.apiKey));
  request.session.delete();
}

async function unavailableOnFailure<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asUnavailable(error);
  }
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

/**
 * A service call made for the signed-in `account`, by a page that was counted against the
 * account's request limit already (`Dashboard.signedIn`): one page is one request, however many
 * calls it makes.
 */
export function sessionCall(request: FastifyRequest, account: AccountView): CallOptions {
  const contextValues = fromAddress(request.ip);
  contextValues.set(AUTHENTICATED_ACCOUNT, account);
  contextValues.set(COUNTED_REQUEST, true);
  return { contextValues };
}
