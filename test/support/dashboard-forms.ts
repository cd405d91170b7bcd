import { expect } from "vitest";
import { COOKIE_NAME } from "../../src/dashboard/session.ts";

// The dashboard over plain HTTP, as a browser without scripts uses it: the sign-in form, pages
// with the session cookie, and forms posted with the page's CSRF token.

/** A browser's visit to the sign-in form: its cookie and the form's CSRF token. */
export async function signInForm(baseUrl: string): Promise<{ cookie: string; token: string }> {
  const response = await fetch(`${baseUrl}/dashboard/sign-in`);
  const html = await response.text();
  const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
  const cookie = (response.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  expect(token).not.toBe("");
  expect(cookie).toMatch(new RegExp(`^${COOKIE_NAME}=`));
  return { cookie, token };
}

/** Signs in through the form; returns the signed-in session's cookie. */
export async function signIn(
  baseUrl: string,
  credentials: { apiKey: string; apiSecret: string },
): Promise<string> {
  const { cookie, token } = await signInForm(baseUrl);
  const response = await postForm(`${baseUrl}/dashboard/sign-in`, cookie, {
    _csrf: token,
    apiKey: credentials.apiKey,
    apiSecret: credentials.apiSecret,
  });
  expect(response.status).toBe(303);
  const signedIn = (response.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  expect(signedIn).toMatch(new RegExp(`^${COOKIE_NAME}=`));
  return signedIn;
}

/** GET of a dashboard page (`path` under /dashboard), redirects not followed. */
export function page(baseUrl: string, cookie: string, path: string): Promise<Response> {
  return fetch(`${baseUrl}/dashboard${path}`, { redirect: "manual", headers: { cookie } });
}

/**
 * A signed-in page with forms (`path` under /dashboard): its HTML, its CSRF token, and the cookie
 * that goes with the token (the CSRF secret is in the session).
 */
export async function formPage(
  baseUrl: string,
  cookie: string,
  path: string,
): Promise<{ html: string; token: string; cookie: string }> {
  const response = await page(baseUrl, cookie, path);
  expect(response.status).toBe(200);
  const html = await response.text();
  const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? "";
  expect(token).not.toBe("");
  return { html, token, cookie: response.headers.get("set-cookie")?.split(";")[0] ?? cookie };
}

/** Presses a button of the overview's sign-out form (`action`), with the page's CSRF token. */
export async function postFromPage(
  baseUrl: string,
  cookie: string,
  action: string,
): Promise<Response> {
  const overview = await formPage(baseUrl, cookie, "/overview");
  return postForm(`${baseUrl}/dashboard${action}`, overview.cookie, { _csrf: overview.token });
}

export function postForm(
  url: string,
  cookie: string,
  fields: Record<string, string>,
): Promise<Response> {
  return fetch(url, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie },
    body: new URLSearchParams(fields).toString(),
  });
}
