import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDatabase } from "../support/database.ts";
import { ADMIN_TOKEN, type RunningService, startService } from "../support/service.ts";

// The console's sign-in over plain HTTP (docs/design.md "Accounts, API keys and the operator
// console"): failed sign-ins limited per address like the dashboard's, and a session that ends
// when the admin token changes.

let service: RunningService;
beforeAll(async () => {
  service = await startService({ SMS_AUTH_FAILURES_PER_MIN: "2" });
});
afterAll(() => service?.close());

/** A sign-in form's cookie and CSRF token, as a browser gets them. */
async function signInForm(consoleUrl: string) {
  const page = await fetch(`${consoleUrl}/sign-in`);
  const cookie = (page.headers.getSetCookie()[0] ?? "").split(";")[0] ?? "";
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? "";
  return { cookie, csrf };
}

async function signIn(consoleUrl: string, token: string) {
  const { cookie, csrf } = await signInForm(consoleUrl);
  const answer = await fetch(`${consoleUrl}/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie },
    body: new URLSearchParams({ _csrf: csrf, operator: "mallory", token }).toString(),
  });
  const session = (answer.headers.getSetCookie()[0] ?? cookie).split(";")[0] ?? "";
  return { status: answer.status, session };
}

describe("console sign-in", () => {
  it("refuses wrong tokens with 401, then every sign-in from the address with 429", async () => {
    const url = service.consoleUrl ?? "";
    expect((await signIn(url, "wrong-1")).status).toBe(401);
    expect((await signIn(url, "wrong-2")).status).toBe(401);
    // Over the allowance: refused before the token is looked at, the right one too.
    expect((await signIn(url, ADMIN_TOKEN)).status).toBe(429);
  });

  it("ends every session when the admin token changes", async () => {
    const database = await testDatabase();
    const other = await startService({ SMS_DASHBOARD_SESSION_KEY: "ab".repeat(32) }, database);
    const url = other.consoleUrl ?? "";
    const { status, session } = await signIn(url, ADMIN_TOKEN);
    expect(status).toBe(303);
    const page = await fetch(`${url}/accounts`, {
      headers: { cookie: session },
      redirect: "manual",
    });
    expect(page.status).toBe(200);
    // The same database and cookie key, another token: the session is not live there.
    const renewed = await startService(
      { SMS_DASHBOARD_SESSION_KEY: "ab".repeat(32), SMS_ADMIN_TOKEN: "another-admin-token-0123" },
      database,
    );
    const refused = await fetch(`${renewed.consoleUrl}/accounts`, {
      headers: { cookie: session },
      redirect: "manual",
    });
    expect(refused.status).toBe(303);
    expect(refused.headers.get("location")).toBe("/sign-in");
    await renewed.close();
    await other.close();
    await database.close();
  });
});
