import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { senderNameRequest, withQuery } from "../rest/helpers.ts";
import { browserTestsSkipped, launchBrowser, screenshot } from "../support/browser.ts";
import { adminHeaders, postJson, type RunningService, startService } from "../support/service.ts";

// The dashboard with the account's other keys and status (docs/design.md "Accounts, API keys and
// the operator console"), in a real browser: any key signs in, the pages offer only what its scope
// allows, a revoked key's session ends at its next page, and the account sees why it is suspended
// and why a sender name was rejected.

let service: RunningService;
let browser: Browser;

beforeAll(async () => {
  service = await startService();
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await service?.close();
});

async function keyOf(account: { apiKey: string; apiSecret: string }, scope: string) {
  const made = await postJson(`${service.baseUrl}/api-keys`, { ...account, name: scope, scope });
  return { apiKey: made.body.apiKey as string, apiSecret: made.body.apiSecret as string };
}

async function signIn(
  context: BrowserContext,
  who: { apiKey: string; apiSecret: string },
): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${service.baseUrl}/dashboard`);
  await page.getByLabel("API key").fill(who.apiKey);
  await page.getByLabel("API secret").fill(who.apiSecret);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(`${service.baseUrl}/dashboard/overview`);
  return page;
}

describe.skipIf(browserTestsSkipped)("the dashboard with keys and status", () => {
  it("takes a read key, and offers it no form that writes", async () => {
    const account = await service.createAccount();
    const reader = await keyOf(account, "read");
    const context = await browser.newContext();
    const page = await signIn(context, reader);
    await expect(page.getByText("with a read key").count()).resolves.toBe(1);
    await page.getByRole("link", { name: "Sender names" }).click();
    await expect(page.getByRole("button", { name: "Request" }).count()).resolves.toBe(0);
    await expect(page.getByText("sign in with a full key").count()).resolves.toBe(1);
    await page.getByRole("link", { name: "Opt-outs" }).click();
    await expect(page.getByRole("button", { name: "Add" }).count()).resolves.toBe(0);
    await context.close();
  });

  it("ends a revoked key's session at its next page", async () => {
    const account = await service.createAccount();
    const sender = await keyOf(account, "send");
    const context = await browser.newContext();
    const page = await signIn(context, sender);
    const revoked = await withQuery("DELETE", `${service.baseUrl}/api-keys/${sender.apiKey}`, {
      ...account,
    });
    expect(revoked.status).toBe(200);
    await page.getByRole("link", { name: "Messages" }).click();
    await page.waitForURL(`${service.baseUrl}/dashboard/sign-in`, { timeout: 5000 });
    await context.close();
  });

  it("shows why the account is suspended, and why a sender name was rejected", async () => {
    const account = await service.createAccount();
    await postJson(`${service.baseUrl}/sender_names`, { ...senderNameRequest("Bank"), ...account });
    await service.admin.rejectSenderName(
      { apiKey: account.apiKey, name: "Bank", reason: "impersonates a bank" },
      adminHeaders,
    );
    await service.admin.suspendAccount(
      { apiKey: account.apiKey, reason: "unpaid invoice" },
      adminHeaders,
    );
    const context = await browser.newContext();
    const page = await signIn(context, account);
    await expect(page.getByTestId("account-status").textContent()).resolves.toContain(
      "This account is suspended: unpaid invoice.",
    );
    await page.getByRole("link", { name: "Sender names" }).click();
    const rejected = page.getByRole("table", {
      name: "Rejected by the operator in the last 30 days",
    });
    await expect(rejected.getByRole("row", { name: /Bank/ }).textContent()).resolves.toContain(
      "impersonates a bank",
    );
    await screenshot(page, "suspended");
    await context.close();
  });
});
