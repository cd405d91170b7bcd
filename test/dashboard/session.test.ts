import { randomBytes } from "node:crypto";
import secureSession from "@fastify/secure-session";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COOKIE_NAME } from "../../src/dashboard/session.ts";
import { DashboardSessions } from "../../src/store/dashboard-sessions.ts";
import { page, postForm, postFromPage, signIn, signInForm } from "../support/dashboard-forms.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { type RunningService, startService } from "../support/service.ts";

// The dashboard's session and refusals over plain HTTP on real sockets: what a browser test shows
// less directly (the failed-authentication limit, the session's lifetime, the cookie's flags in
// production, the 4xx of bad input, the security headers).

const SESSION_KEY = randomBytes(32);
const ENV = {
  SMS_AUTH_FAILURES_PER_MIN: "2",
  SMS_DASHBOARD_SESSION_KEY: SESSION_KEY.toString("hex"),
  SMS_DASHBOARD_SESSION_MINUTES: "30",
};

let database: TestDatabase;
let service: RunningService;
let account: { apiKey: string; apiSecret: string };

beforeAll(async () => {
  // Held here, so a second instance can share it.
  database = await testDatabase({ label: "dashboard_session" });
  service = await startService(ENV, database);
  account = await service.createAccount();
}, 60_000);

afterAll(async () => {
  await service?.close();
  await database?.close();
});

/**
 * A session cookie as the dashboard would write it, signed in at `signedInAt`, naming a session
 * started on the server that lasts `serverLifetimeMs` from now.
 */
async function forgedSession(signedInAt: number, serverLifetimeMs = 30 * 60_000): Promise<string> {
  const sessionId = await DashboardSessions.open(service.store.db, () => new Date()).start(
    account.apiKey,
    serverLifetimeMs,
  );
  const app = Fastify();
  await app.register(secureSession, { key: SESSION_KEY, cookieName: COOKIE_NAME });
  await app.ready();
  const session = app.createSecureSession({ apiKey: account.apiKey, signedInAt, sessionId });
  // Encoded as a cookie value, as the plugin's Set-Cookie does (the value holds a `;`).
  const cookie = `${COOKIE_NAME}=${encodeURIComponent(app.encodeSecureSession(session))}`;
  await app.close();
  return cookie;
}

describe("dashboard session", () => {
  it("ends a session its lifetime after the sign-in", async () => {
    const fresh = await fetch(`${service.baseUrl}/dashboard/overview`, {
      redirect: "manual",
      headers: { cookie: await forgedSession(Date.now()) },
    });
    expect(fresh.status).toBe(200);
    const stale = await fetch(`${service.baseUrl}/dashboard/overview`, {
      redirect: "manual",
      headers: { cookie: await forgedSession(Date.now() - 31 * 60_000) },
    });
    expect(stale.status).toBe(303);
    expect(stale.headers.get("location")).toBe("/dashboard/sign-in");
    // The server's session ended (its expiry passed) while the cookie's time has not.
    const ended = await fetch(`${service.baseUrl}/dashboard/overview`, {
      redirect: "manual",
      headers: { cookie: await forgedSession(Date.now(), -1000) },
    });
    expect(ended.status).toBe(303);
    expect(ended.headers.get("location")).toBe("/dashboard/sign-in");
  });

  it("ends the session on sign-out: a copy of the cookie taken before is refused", async () => {
    const copy = await signIn(service.baseUrl, account);
    expect((await page(service.baseUrl, copy, "/overview")).status).toBe(200);
    const signedOut = await postFromPage(service.baseUrl, copy, "/sign-out");
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("location")).toBe("/dashboard/sign-in?signed-out");
    // The browser's cookie is cleared...
    expect(signedOut.headers.get("set-cookie")).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/i);
    // ...and the copy opens nothing any more.
    for (const path of ["/overview", "/messages", "/sender-names"]) {
      const refused = await page(service.baseUrl, copy, path);
      expect({ path, status: refused.status }).toEqual({ path, status: 303 });
      expect(refused.headers.get("location")).toBe("/dashboard/sign-in");
    }
  });

  it("signs out everywhere: every session of the account ends", async () => {
    const first = await signIn(service.baseUrl, account);
    const second = await signIn(service.baseUrl, account);
    expect((await page(service.baseUrl, second, "/overview")).status).toBe(200);
    // The button is on every page, in the sign-out form.
    const overview = await (await page(service.baseUrl, first, "/overview")).text();
    expect(overview).toContain('formaction="/dashboard/sign-out-everywhere"');
    const everywhere = await postFromPage(service.baseUrl, first, "/sign-out-everywhere");
    expect(everywhere.status).toBe(303);
    expect(everywhere.headers.get("location")).toBe("/dashboard/sign-in?signed-out=everywhere");
    for (const cookie of [first, second]) {
      const refused = await page(service.baseUrl, cookie, "/overview");
      expect(refused.status).toBe(303);
      expect(refused.headers.get("location")).toBe("/dashboard/sign-in");
    }
    // Without its CSRF token, nothing ends.
    const third = await signIn(service.baseUrl, account);
    const forged = await postForm(`${service.baseUrl}/dashboard/sign-out-everywhere`, third, {});
    expect(forged.status).toBe(403);
    expect((await page(service.baseUrl, third, "/overview")).status).toBe(200);
  });

  it("refuses a signed-out session on another instance of the same database", async () => {
    const other = await startService(ENV, database);
    try {
      const copy = await signIn(service.baseUrl, account);
      expect((await page(other.baseUrl, copy, "/overview")).status).toBe(200);
      expect((await postFromPage(service.baseUrl, copy, "/sign-out")).status).toBe(303);
      const refused = await page(other.baseUrl, copy, "/overview");
      expect(refused.status).toBe(303);
      expect(refused.headers.get("location")).toBe("/dashboard/sign-in");
    } finally {
      await other.close();
    }
  });

  it("answers bad input and unknown things with 4xx pages", async () => {
    const cookie = await forgedSession(Date.now());
    const get = (path: string) =>
      fetch(`${service.baseUrl}/dashboard${path}`, { redirect: "manual", headers: { cookie } });
    const cases: [string, number, string][] = [
      ["/messages?batch=abc", 400, "batch must be a batch id"],
      ["/messages?to=12", 400, "to must be a phone number"],
      ["/messages?status=LOST", 400, "status must be one of"],
      ["/messages?from=yesterday", 400, "from must be a date and time"],
      ["/messages?page=not-a-token", 400, "page"],
      ["/messages/abc", 400, "id must be a message id"],
      ["/messages/999999", 404, "no message with id 999999"],
      ["/batches/999999", 404, "999999"],
      ["/nowhere", 404, "no such page"],
    ];
    for (const [path, status, words] of cases) {
      const response = await get(path);
      expect({ path, status: response.status }).toEqual({ path, status });
      expect(response.headers.get("content-type")).toMatch(/^text\/html/);
      await expect(response.text()).resolves.toContain(words);
    }
    // Deleting a name the account does not have: the service's 404.
    const page = await get("/sender-names");
    const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
    const setCookie = page.headers.get("set-cookie")?.split(";")[0] ?? cookie;
    const deleted = await postForm(
      `${service.baseUrl}/dashboard/sender-names/Nobody/delete`,
      setCookie,
      { _csrf: token },
    );
    expect(deleted.status).toBe(404);
  });

  it("sends headers that keep pages private and scripts out", async () => {
    const response = await fetch(`${service.baseUrl}/dashboard/sign-in`);
    const policy = response.headers.get("content-security-policy");
    expect(policy).toContain("default-src 'none'");
    // No page runs a script (the overview's charts are SVG drawn on the server).
    expect(policy).not.toMatch(/script-src/);
    expect(response.headers.get("cache-control")).toBe("no-store");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  });

  // Last: it uses up this address's failed-authentication allowance.
  it("counts wrong credentials toward the failed-authentication limit", async () => {
    const { cookie, token } = await signInForm(service.baseUrl);
    const attempt = (apiSecret: string) =>
      postForm(`${service.baseUrl}/dashboard/sign-in`, cookie, {
        _csrf: token,
        apiKey: account.apiKey,
        apiSecret,
      });
    expect((await attempt("wrong-1")).status).toBe(401);
    expect((await attempt("wrong-2")).status).toBe(401);
    // Over the allowance (2 a minute): refused, the right secret too, with a retry hint.
    const limited = await attempt(account.apiSecret);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    await expect(limited.text()).resolves.toContain("too many failed authentications");
    // The REST door shares the limit: the address is refused there too.
    const rest = await fetch(
      `${service.baseUrl}/sender_names?apiKey=${account.apiKey}&apiSecret=${account.apiSecret}`,
    );
    expect(rest.status).toBe(429);
  });
});

describe("dashboard session in production", () => {
  it("marks the session cookie Secure", async () => {
    const production = await startService({ NODE_ENV: "production" });
    try {
      const response = await fetch(`${production.baseUrl}/dashboard/sign-in`);
      const setCookie = response.headers.get("set-cookie") ?? "";
      expect(setCookie).toMatch(/; Secure/i);
      expect(setCookie).toMatch(/; HttpOnly/i);
      expect(setCookie).toMatch(/; SameSite=Strict/i);
    } finally {
      await production.close();
    }
  });
});
