import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLogCollection } from "../../src/accounts/audit-log.ts";
import { senderNameRequest } from "../rest/helpers.ts";
import { browserTestsSkipped, launchBrowser, screenshot, tableCells } from "../support/browser.ts";
import { ADMIN_TOKEN, postJson, type RunningService, startService } from "../support/service.ts";

// The operator's console in a real browser (Debian's Chromium) against the whole service on real
// sockets (docs/design.md "Accounts, API keys and the operator console"): sign-in with the admin
// token into an HttpOnly, SameSite=Strict session, every page, every action through AdminService
// and into the audit log under the operator's name, and forms refused without their CSRF token.

let service: RunningService;
let browser: Browser;
let consoleUrl: string;

beforeAll(async () => {
  service = await startService({
    SMS_RUN_WORKERS: "true",
    SMS_SIM_SEND_DELAY_MS: "50",
    SMS_SIM_RECEIPT_DELAY_MS: "100",
  });
  consoleUrl = service.consoleUrl ?? "";
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

const shot = (page: Page, name: string) => screenshot(page, name, "SMS_CONSOLE_SCREENSHOTS");

async function signIn(context: BrowserContext, token = ADMIN_TOKEN): Promise<Page> {
  const page = await context.newPage();
  await page.goto(consoleUrl);
  await page.getByLabel("Your name").fill("alice");
  await page.getByLabel("Admin token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  return page;
}

describe.skipIf(browserTestsSkipped)("operator console", () => {
  it("signs in with the admin token into an HttpOnly, SameSite=Strict session; a wrong token is a 401", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(consoleUrl);
    expect(page.url()).toBe(`${consoleUrl}/sign-in`);
    await shot(page, "sign-in");
    await page.getByLabel("Your name").fill("alice");
    await page.getByLabel("Admin token").fill("not-the-token");
    const refused = page.waitForResponse(
      (r) => r.url().endsWith("/sign-in") && r.request().method() === "POST",
    );
    await page.getByRole("button", { name: "Sign in" }).click();
    expect((await refused).status()).toBe(401);
    await expect(page.getByRole("alert").textContent()).resolves.toContain(
      "the admin token is wrong",
    );

    await page.getByLabel("Admin token").fill(ADMIN_TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(`${consoleUrl}/accounts`);
    const cookie = (await context.cookies()).find((c) => c.name === "sms_console");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict" });
    expect(cookie?.value).not.toContain(ADMIN_TOKEN);
    await context.close();
  });

  it("creates an account, adds credit, makes and revokes a key, suspends and resumes it, all audited", async () => {
    const context = await browser.newContext();
    const page = await signIn(context);
    await page.getByLabel("Name", { exact: true }).fill("Console Shop");
    await page.getByLabel("Credit").fill("25");
    await page.getByRole("button", { name: "Create" }).click();
    const apiKey = (await page.getByTestId("API key").textContent()) ?? "";
    expect(apiKey).toMatch(/^[0-9a-f]{24}$/);
    await expect(page.getByTestId("API secret").textContent()).resolves.toMatch(/.{40,}/);
    await page.getByRole("link", { name: "Back to the account" }).click();

    await page.getByLabel("Add (negative to take back)").fill("5");
    await page.getByRole("button", { name: "Add credit" }).click();
    await expect(page.getByTestId("credit").textContent()).resolves.toBe("30");

    await page.getByLabel("Key name").fill("ci");
    await page.getByLabel("Scope").selectOption("read");
    await page.getByRole("button", { name: "Make a key" }).click();
    const keyId = (await page.getByTestId("API key").textContent()) ?? "";
    await page.getByRole("link", { name: "Back to the account" }).click();
    const keys = await tableCells(page, "API keys");
    expect(keys.map((row) => [row[0], row[2]])).toEqual([
      [apiKey, "full"],
      [keyId, "read"],
    ]);
    await page.getByRole("button", { name: "Revoke ci" }).click();
    expect((await tableCells(page, "API keys")).map((row) => row[0])).toEqual([apiKey]);

    await page.getByLabel("Reason (shown to the account)").fill("spam complaints");
    await page.getByRole("button", { name: "Suspend" }).click();
    await expect(page.getByTestId("status").textContent()).resolves.toBe(
      "suspended: spam complaints",
    );
    await shot(page, "account");
    await page.getByRole("button", { name: "Resume" }).click();
    await expect(page.getByTestId("status").textContent()).resolves.toBe("active");

    await page.getByRole("link", { name: "Audit log" }).click();
    const audit = await tableCells(page, "Operator actions, newest first");
    const mine = audit.filter((row) => row[2] === apiKey);
    expect(mine.map((row) => row[1])).toEqual([
      "account.resume",
      "account.suspend",
      "api-key.revoke",
      "api-key.create",
      "account.add-credit",
      "account.create",
    ]);
    expect(mine[0]?.[4]).toContain("alice · console");
    await shot(page, "audit-log");

    await page.getByRole("link", { name: "Accounts" }).click();
    await page.getByLabel("Name starts with").fill("Console Sh");
    await page.getByRole("button", { name: "Search" }).click();
    const found = await tableCells(page, "Accounts");
    expect(found.map((row) => row[1])).toEqual([apiKey]);
    await shot(page, "accounts");
    await context.close();
  });

  it("shows the approval queue, approves one name and rejects another with a reason", async () => {
    const account = await service.createAccount();
    for (const name of ["ConsoleA", "ConsoleB"]) {
      await postJson(`${service.baseUrl}/sender_names`, { ...senderNameRequest(name), ...account });
    }
    const context = await browser.newContext();
    const page = await signIn(context);
    await page.getByRole("link", { name: "Approvals" }).click();
    const queue = await tableCells(page, "Sender names waiting for approval, oldest first");
    expect(queue.filter((row) => row[1] === account.apiKey).map((row) => row[0])).toEqual([
      "ConsoleA",
      "ConsoleB",
    ]);
    await shot(page, "approvals");
    await page.getByRole("button", { name: "Approve ConsoleA" }).click();
    const row = page.getByRole("row").filter({ hasText: "ConsoleB" });
    await row.getByLabel("Reason").fill("unclear owner");
    await row.getByRole("button", { name: "Reject ConsoleB" }).click();
    const left = await tableCells(page, "Sender names waiting for approval, oldest first");
    expect(left.filter((r) => r[1] === account.apiKey)).toEqual([]);
    const names = await service.store.senderNames.find({ accountId: account.apiKey }).toArray();
    expect(names.map((n) => [n.name, n.pending])).toEqual([["ConsoleA", false]]);
    await context.close();
  });

  it("assigns and releases a number, and shows usage and the carriers", async () => {
    const account = await service.createAccount();
    await postJson(`${service.baseUrl}/sms`, { ...account, to: "+15550100200", text: "hi" });
    const context = await browser.newContext();
    const page = await signIn(context);
    await page.getByRole("link", { name: "Numbers" }).click();
    await page.getByLabel("Number", { exact: true }).fill("+4930555000111");
    await page.getByLabel("Account's API key").fill(account.apiKey);
    await page.getByRole("button", { name: "Assign" }).click();
    const numbers = await tableCells(page, "Assigned numbers");
    expect(numbers.find((row) => row[0] === "+4930555000111")?.[1]).toBe(account.apiKey);
    await shot(page, "numbers");
    await page.getByRole("button", { name: "Release +4930555000111" }).click();
    expect((await tableCells(page, "Assigned numbers")).map((row) => row[0])).not.toContain(
      "+4930555000111",
    );

    await page.getByRole("link", { name: "Usage" }).click();
    await page.getByLabel("Account's API key").fill(account.apiKey);
    await page.getByRole("button", { name: "Show" }).click();
    const usage = await tableCells(page, "Usage per account and day, last 14 days");
    expect(usage.map((row) => [row[1], row[2], row[4]])).toEqual([[account.apiKey, "1", "1"]]);
    await shot(page, "usage");

    await page.getByRole("link", { name: "Carriers" }).click();
    await expect(
      page.getByRole("table", { name: "Carriers of every instance" }).count(),
    ).resolves.toBe(1);
    await context.close();
  });

  it("refuses forms without their CSRF token, cross-origin or not, and changes nothing", async () => {
    const account = await service.createAccount();
    const context = await browser.newContext();
    await signIn(context);
    // The signed-in browser's cookie, without the form's token.
    const forged = await context.request.post(`${consoleUrl}/accounts/${account.apiKey}/suspend`, {
      form: { reason: "forged" },
      headers: { origin: "https://evil.example" },
    });
    expect(forged.status()).toBe(403);
    // No cookie at all: sent to the sign-in page, nothing done.
    const anonymous = await fetch(`${consoleUrl}/accounts/${account.apiKey}/close`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "reason=x",
      redirect: "manual",
    });
    expect([303, 403]).toContain(anonymous.status);
    const stored = await service.store.accounts.findOne({ _id: account.apiKey });
    expect(stored?.status).toBeUndefined();
    const audited = await auditLogCollection(service.store.db).countDocuments({
      accountId: account.apiKey,
      action: /^account\.(suspend|close)$/,
    });
    expect(audited).toBe(0);
    await context.close();
  });
});

describe("the console's port", () => {
  it("is off with OPERATOR_PORT=0", async () => {
    const off = await startService({ OPERATOR_PORT: "0" });
    expect(off.console).toBeUndefined();
    await off.close();
  });
});
