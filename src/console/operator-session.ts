import { createHash, randomBytes } from "node:crypto";
import { ConnectError } from "@connectrpc/connect";
import secureSession from "@fastify/secure-session";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { sameSecret } from "../domain/credentials.ts";
import { fromAddress } from "../rate-limits/client-address.ts";
import type { ConsoleDeps, Operator } from "./console-kit.ts";

// The operator's session: signed in with the admin token and a name for the audit log, kept on
// the server (a session document, so signing out ends it on every instance) under a fingerprint
// of the token, so every session ends when the token changes. The cookie (encrypted, HttpOnly,
// SameSite=Strict) holds the session id and the name, never the token.

declare module "@fastify/secure-session" {
  interface SessionData {
    operator: string;
    operatorSession: string;
    operatorSignedInAt: number;
  }
}

export const CONSOLE_COOKIE = "sms_console";
export const OPERATOR_NAME_MAX_CHARS = 100;

/** What sessions are kept under: the token's fingerprint, never the token. */
export const tokenFingerprint = (token: string): string =>
  `operator:${createHash("sha256").update(token).digest("base64url").slice(0, 22)}`;

export async function registerOperatorSession(
  app: FastifyInstance,
  deps: ConsoleDeps,
): Promise<void> {
  const { config } = deps;
  // A key of its own, derived from the dashboard's when set: a dashboard cookie opens no console.
  const key = config.dashboardSessionKey
    ? createHash("sha256").update("console").update(config.dashboardSessionKey).digest()
    : randomBytes(32);
  await app.register(secureSession, {
    key,
    cookieName: CONSOLE_COOKIE,
    expiry: config.dashboardSessionMinutes * 60,
    cookie: {
      path: "/",
      httpOnly: true,
      sameSite: "strict",
      secure: config.production,
      maxAge: config.dashboardSessionMinutes * 60,
    },
  });
}

/** The request's signed-in operator, or undefined (no session, expired, ended, token changed). */
export async function signedInOperator(
  request: FastifyRequest,
  deps: ConsoleDeps,
): Promise<Operator | undefined> {
  const name = request.session.get("operator");
  const sessionId = request.session.get("operatorSession");
  const at = request.session.get("operatorSignedInAt");
  if (typeof name !== "string" || typeof sessionId !== "string" || typeof at !== "number") {
    return undefined;
  }
  const live =
    Date.now() - at <= deps.config.dashboardSessionMinutes * 60_000 &&
    (await deps.sessions.isLive(sessionId, tokenFingerprint(deps.config.adminToken)));
  if (!live) {
    request.session.delete();
    return undefined;
  }
  return operatorOf(request, name, deps);
}

export function operatorOf(request: FastifyRequest, name: string, deps: ConsoleDeps): Operator {
  return {
    name,
    call: {
      headers: {
        authorization: `Bearer ${deps.config.adminToken}`,
        "sms-operator": name,
      },
      contextValues: fromAddress(request.ip),
    },
  };
}

/**
 * Checks a sign-in: the address's failed-authentication allowance first (as the dashboard's), the
 * token in constant time, a failure counted. Answers the errors to show, or undefined.
 */
export function checkSignIn(
  request: FastifyRequest,
  deps: ConsoleDeps,
  token: string,
  name: string,
): Record<string, string[]> | undefined {
  try {
    deps.limits?.admitAddress(request.ip);
  } catch (error) {
    if (error instanceof ConnectError) return { request: [error.rawMessage] };
    throw error;
  }
  const errors: Record<string, string[]> = {};
  if (name === "") errors.operator = ["your name cannot be empty: the audit log shows it"];
  else if ([...name].length > OPERATOR_NAME_MAX_CHARS) {
    errors.operator = [`your name must be at most ${OPERATOR_NAME_MAX_CHARS} characters`];
  }
  if (!sameSecret(token, deps.config.adminToken)) {
    deps.limits?.authenticationFailed(request.ip);
    errors.token = ["the admin token is wrong"];
  }
  return Object.keys(errors).length > 0 ? errors : undefined;
}

export async function startOperatorSession(
  request: FastifyRequest,
  name: string,
  deps: ConsoleDeps,
): Promise<void> {
  const previous = request.session.get("operatorSession");
  if (typeof previous === "string") await deps.sessions.end(previous);
  const id = await deps.sessions.start(
    tokenFingerprint(deps.config.adminToken),
    deps.config.dashboardSessionMinutes * 60_000,
  );
  request.session.regenerate();
  request.session.set("operator", name);
  request.session.set("operatorSession", id);
  request.session.set("operatorSignedInAt", Date.now());
}

export async function endOperatorSession(request: FastifyRequest, deps: ConsoleDeps) {
  const id = request.session.get("operatorSession");
  if (typeof id === "string") await deps.sessions.end(id);
  request.session.delete();
}
