import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserTestsSkipped, launchBrowser } from "../support/browser.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";

// The dashboard's scheduled messages in a real browser (docs/design.md "Message reads, client
// references, scheduled sends and cancel"): listed with their client reference and time, canceled
// with the button, the message page then CANCELED and refunded.

let service: RunningService;
let browser: Browser;
let account: { apiKey: string; apiSecret: string };

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 100 });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
});

async function signIn(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${service.baseUrl}/dashboard`);
  await page.getByLabel("API key").fill(account.apiKey);
  await page.getByLabel("API secret").fill(account.apiSecret);
  await page.getByRole("button", { name: "Sign in" }).click();
  return page;
}

describe.skipIf(browserTestsSkipped)("scheduled messages", () => {
  it("lists a scheduled message with its client ref, and its Cancel button cancels it", async () => {
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+4915112345678",
      text: "Tomorrow at nine",
      clientRef: "order-77",
      sendAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(sent.status).toBe(200);
    const page = await signIn();
    await page.getByRole("link", { name: "Scheduled" }).click();
    const row = page.getByRole("row", { name: new RegExp(`Message ${sent.body.id}`) });
    await expect.poll(() => row.textContent()).toContain("order-77");
    await row.getByRole("button", { name: `Cancel message ${sent.body.id}` }).click();
    await page.waitForURL(`**/dashboard/messages/${sent.body.id}`);
    expect(await page.getByTestId("status").textContent()).toBe("CANCELED");
    expect(await page.getByTestId("client-ref").textContent()).toBe("order-77");
    expect(await page.getByRole("button", { name: "Cancel this message" }).count()).toBe(0);
    const credit = await service.store.accounts.findOne({ _id: account.apiKey });
    expect(credit?.creditMicros).toBe(100_000_000);
    // The reason column is there for undelivered messages; the client ref column for all.
    await page.goto(`${service.baseUrl}/dashboard/messages`);
    const headers = await page.getByRole("columnheader").allTextContents();
    expect(headers).toContain("Reason");
    expect(headers).toContain("Client ref");
  });
});
