import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserTestsSkipped, launchBrowser, screenshot, tableCells } from "../support/browser.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

// The account dashboard in a real browser (Debian's Chromium) against the whole service on real
// sockets: worker, simulator and notifier running, webhooks to a real receiver on loopback.

const ENV = {
  SMS_RUN_WORKERS: "true",
  SMS_SIM_SEND_DELAY_MS: "50",
  SMS_SIM_RECEIPT_DELAY_MS: "100",
  SMS_WEBHOOK_RETRY_SCHEDULE: "200ms,400ms,800ms",
};

let service: RunningService;
let receiver: WebhookReceiver;
let browser: Browser;
let account: { apiKey: string; apiSecret: string };

beforeAll(async () => {
  // The first request for each status fails with 500, so every message shows a failed attempt
  // and the retry that succeeded.
  const failedOnce = new Set<string>();
  receiver = await startWebhookReceiver({
    respond: ({ query }) => {
      const key = `${query.id}:${query.status}`;
      if (failedOnce.has(key)) return 200;
      failedOnce.add(key);
      return 500;
    },
  });
  service = await startService(ENV);
  account = await service.createAccount({
    credit: 1000,
    statusUrl: `${receiver.baseUrl}/hooks`,
  });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await receiver?.close();
});

async function signIn(context: BrowserContext, credentials = account): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${service.baseUrl}/dashboard`);
  await page.getByLabel("API key").fill(credentials.apiKey);
  await page.getByLabel("API secret").fill(credentials.apiSecret);
  await page.getByRole("button", { name: "Sign in" }).click();
  return page;
}

// Without Chromium this fails, saying how to install it, unless SMS_TEST_SKIP_BROWSER=1.
describe.skipIf(browserTestsSkipped)("dashboard", () => {
  it("signs in with apiKey and apiSecret into an HttpOnly, SameSite=Strict session cookie", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${service.baseUrl}/dashboard`);
    expect(page.url()).toBe(`${service.baseUrl}/dashboard/sign-in`);
    await screenshot(page, "sign-in");
    await page.getByLabel("API key").fill(account.apiKey);
    await page.getByLabel("API secret").fill(account.apiSecret);
    // By keyboard: Enter in the secret's field submits the form.
    await page.getByLabel("API secret").press("Enter");
    await page.waitForURL(`${service.baseUrl}/dashboard/overview`);
    await expect(page.getByTestId("credit").textContent()).resolves.toBe("1000");

    const cookie = (await context.cookies()).find((c) => c.name === "sms_dashboard");
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/dashboard" });
    expect(cookie?.value).not.toContain(account.apiSecret);
    await context.close();
  });

  it("refuses wrong credentials with a 401 and the service's words", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${service.baseUrl}/dashboard/sign-in`);
    await page.getByLabel("API key").fill(account.apiKey);
    await page.getByLabel("API secret").fill("not-the-secret");
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.getByRole("button", { name: "Sign in" }).click(),
    ]);
    expect(response.status()).toBe(401);
    await expect(page.getByRole("alert").textContent()).resolves.toContain(
      "apiKey and apiSecret do not match an account",
    );
    await screenshot(page, "sign-in-refused");
    // Nothing signed in: the pages send the browser back to the form.
    await page.goto(`${service.baseUrl}/dashboard/overview`);
    expect(page.url()).toBe(`${service.baseUrl}/dashboard/sign-in`);
    await context.close();
  });

  it("finds an undelivered message and shows its reason, history and webhook attempts", async () => {
    const to = "+9991234562"; // the simulator's Unreachable
    const sent = await postJson(`${service.baseUrl}/sms`, { ...account, to, text: "<b>hi</b>" });
    expect(sent.status).toBe(200);
    const id = String(sent.body.id);
    await receiver.waitFor((requests) =>
      requests.some(
        (r) => r.query.id === id && r.query.status === "DELIVERY_ERROR" && r.answered === 200,
      ),
    );
    // Another message, delivered, so the overview's chart has two bars.
    await postJson(`${service.baseUrl}/sms`, { ...account, to: "+4915112345678", text: "ok" });

    const context = await browser.newContext();
    const page = await signIn(context);
    await page.waitForURL(/\/overview$/);
    await screenshot(page, "overview");
    await page.getByRole("link", { name: "Messages", exact: true }).click();
    await page.getByLabel("Number").fill(to);
    await page.getByLabel("Status").selectOption("DELIVERY_ERROR");
    await page.getByRole("button", { name: "Search" }).click();
    await screenshot(page, "messages");
    const rows = page.locator("table.messages tbody tr");
    await expect(rows.count()).resolves.toBe(1);
    await expect(rows.first().textContent()).resolves.toContain("Unreachable");
    await page.getByRole("link", { name: `Message ${id}` }).click();

    await expect(page.getByTestId("status").textContent()).resolves.toBe("DELIVERY_ERROR");
    await expect(page.getByTestId("reason").textContent()).resolves.toContain(
      "Unreachable: Handset out of range, off, dead battery or otherwise not contactable",
    );
    // The text is shown as text, never as markup.
    await expect(page.locator("pre.text").first().textContent()).resolves.toBe("<b>hi</b>");
    expect(await page.locator("main b").count()).toBe(0);
    // Every status change with its webhook attempts: a 500, then the retry's 200.
    const history = page.locator("section.step h3");
    await expect(history.allTextContents()).resolves.toEqual([
      expect.stringMatching(/^ACCEPTED at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/),
      expect.stringMatching(/^SENT at /),
      expect.stringMatching(/^DELIVERY_ERROR at /),
    ]);
    const cells = await tableCells(page, "Webhook attempts for DELIVERY_ERROR");
    expect(cells.map((row) => row[1])).toEqual(["500", "200"]);
    expect(cells[0]?.[2]).not.toBe("—");
    await screenshot(page, "message");
    await context.close();
  });

  it("shows a batch's progress from its counters, and its messages", async () => {
    const messages = ["+4915100000001", "+4915100000002", "+9991234566", "+9991234561"].map(
      (to) => ({ to, text: `batch message to ${to}` }),
    );
    const created = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      name: "spring <sale>",
      messages,
    });
    expect(created.status).toBe(200);
    const batchId = String(created.body.id);
    await receiver.waitFor(
      (requests) =>
        requests.filter(
          (r) =>
            r.query.batch_id === batchId &&
            r.answered === 200 &&
            ["DELIVERED", "DELIVERY_ERROR", "SEND_ERROR"].includes(r.query.status ?? ""),
        ).length === 4,
    );

    const context = await browser.newContext();
    const page = await signIn(context);
    await page.getByRole("link", { name: "Batches" }).click();
    await screenshot(page, "batches");
    await page.getByRole("link", { name: `Batch ${batchId} — spring <sale>` }).click();
    const bar = page.getByLabel(/Finished 4 of 4 accepted messages/);
    await expect(bar.getAttribute("value")).resolves.toBe("4");
    await expect(bar.getAttribute("max")).resolves.toBe("4");
    await expect(page.locator('[data-count="delivered"]').textContent()).resolves.toBe("2");
    await expect(page.locator('[data-count="undelivered"]').textContent()).resolves.toBe("2");
    await expect(page.locator("table.messages tbody tr").count()).resolves.toBe(4);
    await screenshot(page, "batch");
    await context.close();
  });

  it("requests a sender name, shows the service's errors, and deletes it", async () => {
    const context = await browser.newContext();
    const page = await signIn(context);
    await page.getByRole("link", { name: "Sender names" }).click();

    // The service's own refusal, in the spec's field names, with a 400.
    await page.getByLabel("Name", { exact: true }).fill("TOO-LONG-NAME!");
    await page.getByLabel("Purpose").selectOption("OTP");
    await page.getByLabel("Owner type", { exact: true }).selectOption("COMPANY");
    await page.getByLabel("Owner", { exact: true }).fill("Acme Ltd");
    await page.getByLabel("Example message").fill("Your code is 1234");
    const [refused] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.getByRole("button", { name: "Request" }).click(),
    ]);
    expect(refused.status()).toBe(400);
    await expect(page.locator('.errors [data-field="name"]').textContent()).resolves.toContain(
      "at most 11 characters",
    );
    // What was typed is kept for the correction.
    await expect(page.getByLabel("Owner", { exact: true }).inputValue()).resolves.toBe("Acme Ltd");

    await page.getByLabel("Name", { exact: true }).fill("Acme");
    await page.getByRole("button", { name: "Request" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toContain("Acme");
    const row = page.locator('tr[data-name="Acme"]');
    await expect(row.locator("td").allTextContents()).resolves.toEqual(
      expect.arrayContaining(["yes", "no", "OTP", "COMPANY: Acme Ltd"]),
    );
    await screenshot(page, "sender-names");

    await page.getByRole("button", { name: "Delete sender name Acme" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toContain("deleted");
    expect(await page.locator('tr[data-name="Acme"]').count()).toBe(0);
    await context.close();
  });

  it("refuses a form posted without its CSRF token with a 403", async () => {
    const context = await browser.newContext();
    const page = await signIn(context);
    await page.goto(`${service.baseUrl}/dashboard/sender-names`);
    await page
      .locator('form[action="/dashboard/sender-names"] input[name="_csrf"]')
      .evaluate((input) => input.remove());
    await page.getByLabel("Name", { exact: true }).fill("Forged");
    await page.getByLabel("Purpose").selectOption("MARKETING");
    await page.getByLabel("Owner type", { exact: true }).selectOption("WEBSITE");
    await page.getByLabel("Owner", { exact: true }).fill("example.com");
    await page.getByLabel("Example message").fill("Sale!");
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.getByRole("button", { name: "Request" }).click(),
    ]);
    expect(response.status()).toBe(403);
    // Nothing was requested.
    await page.goto(`${service.baseUrl}/dashboard/sender-names`);
    expect(await page.locator('tr[data-name="Forged"]').count()).toBe(0);
    await context.close();
  });

  it("shows the settings and signs out", async () => {
    const context = await browser.newContext();
    const page = await signIn(context);
    await page.getByRole("link", { name: "Settings" }).click();
    await expect(page.getByTestId("status-url").textContent()).resolves.toContain(
      `${receiver.baseUrl}/hooks`,
    );
    await screenshot(page, "settings");
    // By keyboard only: Tab from the top reaches the sign-out button, Enter presses it.
    await page.locator("body").focus();
    let focused = "";
    for (let i = 0; i < 15 && focused !== "Sign out"; i++) {
      await page.keyboard.press("Tab");
      focused = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? "");
    }
    expect(focused).toBe("Sign out");
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/sign-in\?signed-out$/);
    await page.goto(`${service.baseUrl}/dashboard/overview`);
    expect(page.url()).toBe(`${service.baseUrl}/dashboard/sign-in`);
    await context.close();
  });

  it("signs out everywhere: another browser's session ends too", async () => {
    const laptop = await browser.newContext();
    const phone = await browser.newContext();
    const here = await signIn(laptop);
    const there = await signIn(phone);
    await there.waitForURL(/\/overview$/);
    await here.getByRole("button", { name: "Sign out everywhere" }).click();
    await here.waitForURL(/\/sign-in\?signed-out=everywhere$/);
    await expect(here.getByRole("status").textContent()).resolves.toContain(
      "signed out everywhere",
    );
    // The other browser still has its cookie, but its session has ended.
    expect((await phone.cookies()).some((c) => c.name === "sms_dashboard")).toBe(true);
    await there.goto(`${service.baseUrl}/dashboard/messages`);
    expect(there.url()).toBe(`${service.baseUrl}/dashboard/sign-in`);
    await laptop.close();
    await phone.close();
  });
});
