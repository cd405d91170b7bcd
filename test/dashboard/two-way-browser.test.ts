import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inboundMessagesCollection } from "../../src/store/inbound-messages.ts";
import { browserTestsSkipped, launchBrowser, screenshot, tableCells } from "../support/browser.ts";
import { eventually } from "../support/fixtures.ts";
import { adminHeaders, type RunningService, startService } from "../support/service.ts";
import {
  failingOncePerWebhook,
  startWebhookReceiver,
  type WebhookReceiver,
} from "../support/webhook-receiver.ts";

// The dashboard's inbound, opt-out and settings pages in a real browser (Debian's Chromium)
// against the whole service, as an account holder uses them: through the navigation, the search
// form, buttons and the keyboard. Inbound messages come in through AdminService.SimulateInbound,
// as the simulator carrier's MO would, and their webhooks go to a real receiver on loopback (the
// notifier runs). `npm run screenshots` saves docs/dashboard/ from here too.

const NUMBER = "+4915799990001";
const HANDSET = "+4917012345678";

let service: RunningService;
let receiver: WebhookReceiver;
let browser: Browser;
let account: { apiKey: string; apiSecret: string };
const ids: string[] = [];

beforeAll(async () => {
  // Each inbound webhook's first request fails with 500, its retry gets 200: every message
  // shows a failed attempt and the one that succeeded.
  receiver = await startWebhookReceiver({ respond: failingOncePerWebhook() });
  service = await startService({
    SMS_RUN_WORKERS: "true",
    SMS_SIM_SEND_DELAY_MS: "0",
    SMS_SIM_RECEIPT_DELAY_MS: "0",
    SMS_WEBHOOK_RETRY_SCHEDULE: "200ms,400ms,800ms",
  });
  account = await service.createAccount();
  await service.admin.assignNumber({ apiKey: account.apiKey, number: NUMBER }, adminHeaders);
  await service.admin.setInboundUrl(
    { apiKey: account.apiKey, inboundUrl: `${receiver.baseUrl}/inbound` },
    adminHeaders,
  );
  for (const [from, text] of [
    [HANDSET, "Is my order on its way?"],
    ["+4917087654321", "HELP"],
    [HANDSET, "Thanks! <3"],
    ["+4917055500000", "stop"],
  ] as const) {
    const { inboundMessage } = await service.admin.simulateInbound(
      { sender: from, to: NUMBER, text },
      adminHeaders,
    );
    ids.push(inboundMessage?.id.toString() ?? "");
  }
  await eventually(
    async () =>
      (await inboundMessagesCollection(service.store.db).countDocuments({
        accountId: account.apiKey,
        "webhook.state": "delivered",
      })) === ids.length,
  );
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await receiver?.close();
});

async function signedIn(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${service.baseUrl}/dashboard`);
  await page.getByLabel("API key").fill(account.apiKey);
  await page.getByLabel("API secret").fill(account.apiSecret);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL(/\/overview$/);
  return page;
}

describe.skipIf(browserTestsSkipped)("dashboard: two-way pages in a browser", () => {
  it("searches inbound messages by sender and opens one", async () => {
    const page = await signedIn();
    await page.getByRole("link", { name: "Inbound", exact: true }).click();
    await expect(page.locator("table.inbound tbody tr").count()).resolves.toBe(4);
    await screenshot(page, "inbound");

    await page.getByLabel("From (handset)").fill(HANDSET);
    await page.getByRole("button", { name: "Search" }).click();
    const rows = page.locator("table.inbound tbody tr");
    await expect(rows.count()).resolves.toBe(2);
    // Newest first; the text shown as text.
    await expect(rows.first().locator("pre.text").textContent()).resolves.toBe("Thanks! <3");
    await expect(page.getByLabel("From (handset)").inputValue()).resolves.toBe(HANDSET);

    await page.getByRole("link", { name: `Inbound ${ids[0]}` }).click();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(
      `Inbound message ${ids[0]}`,
    );
    await expect(page.getByTestId("text").textContent()).resolves.toBe("Is my order on its way?");
    await expect(page.getByTestId("opt-out-type").textContent()).resolves.toContain("none");
    // Its inbound webhook, as a message's status webhooks are shown: a 500, then the retry's 200.
    await expect(page.getByTestId("webhook-state").textContent()).resolves.toBe("delivered");
    const cells = await tableCells(page, "Inbound webhook attempts");
    expect(cells.map((row) => row[1])).toEqual(["500", "200"]);
    expect(cells[0]?.[2]).not.toBe("—");
    expect(cells[1]?.[2]).toBe("—");
    expect(cells.every((row) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/.test(row[0] ?? ""))).toBe(
      true,
    );
    await page.goto(`${service.baseUrl}/dashboard/inbound/${ids[3]}`);
    await expect(page.getByTestId("opt-out-type").textContent()).resolves.toMatch(/^STOP: /);
    await screenshot(page, "inbound-message");
    await page.context().close();
  });

  it("adds a number to the opt-out list and removes it by keyboard; a handset's STOP stays", async () => {
    const page = await signedIn();
    await page.getByRole("link", { name: "Opt-outs" }).click();
    const stopRow = page.locator('tr[data-number="+4917055500000"]');
    await expect(stopRow.textContent()).resolves.toContain("only the handset's START lifts it");
    expect(await stopRow.getByRole("button").count()).toBe(0);

    await page.getByLabel("Number", { exact: true }).fill("+4915112340000");
    await page.getByLabel("Number", { exact: true }).press("Enter");
    // The form's answer is a new page: wait for its status, not the one before the submit.
    await page
      .getByRole("status")
      .filter({ hasText: "+4915112340000 is on the opt-out list" })
      .waitFor();
    await screenshot(page, "opt-outs");

    const remove = page.getByRole("button", {
      name: "Remove +4915112340000 from the opt-out list",
    });
    await remove.focus();
    await page.keyboard.press("Enter");
    // The form's answer is a new page: wait for its status, not the one before the submit.
    await page
      .getByRole("status")
      .filter({ hasText: "+4915112340000 is off the opt-out list" })
      .waitFor();
    expect(await page.locator('tr[data-number="+4915112340000"]').count()).toBe(0);
    expect(await stopRow.count()).toBe(1);
    await page.context().close();
  });

  it("saves the inbound URL and a reply text, and shows the service's refusal", async () => {
    const page = await signedIn();
    await page.getByRole("link", { name: "Settings" }).click();
    await expect(page.getByLabel("Reply to HELP").inputValue()).resolves.toContain(
      "reply STOP to get no more messages",
    );

    await page.getByLabel("Inbound URL").fill("https://example.com/inbound");
    await page.getByLabel("Reply to STOP").fill("STOP");
    const [refused] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST"),
      page.getByRole("button", { name: "Save" }).click(),
    ]);
    expect(refused.status()).toBe(400);
    await expect(page.locator('.errors [data-field="stopReply"]').textContent()).resolves.toContain(
      "must not be an opt-out word itself",
    );
    await expect(page.getByLabel("Inbound URL").inputValue()).resolves.toBe(
      "https://example.com/inbound",
    );

    await page
      .getByLabel("Reply to STOP")
      .fill("Acme: you are unsubscribed. Text START to return.");
    await page.getByRole("button", { name: "Save" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toBe("Inbound settings saved.");
    await expect(page.getByLabel("Inbound URL").inputValue()).resolves.toBe(
      "https://example.com/inbound",
    );
    await expect(page.getByLabel("Reply to STOP").inputValue()).resolves.toBe(
      "Acme: you are unsubscribed. Text START to return.",
    );
    await page.context().close();
  });
});
