import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { auditLogCollection } from "../../src/accounts/audit-log.ts";
import { PAGE_SIZE } from "../../src/console/usage-page.ts";
import { senderNameRequest } from "../rest/helpers.ts";
import { browserTestsSkipped, launchBrowser, screenshot, tableCells } from "../support/browser.ts";
import {
  ADMIN_TOKEN,
  adminHeaders,
  postJson,
  type RunningService,
  startService,
} from "../support/service.ts";
import { startSmsc, type TestSmsc } from "../support/smsc.ts";

// The operator's console in a real browser (Debian's Chromium) against the whole service on real
// sockets (docs/design.md "Accounts, API keys and the operator console"): sign-in with the admin
// token into an HttpOnly, SameSite=Strict session, every page, every action through AdminService
// and into the audit log under the operator's name, and forms refused without their CSRF token.
// The service is bound to the test SMSC, so the carriers page shows a real adapter's binds, window
// and submissions.

let smsc: TestSmsc;
let service: RunningService;
let browser: Browser;
let consoleUrl: string;

beforeAll(async () => {
  smsc = await startSmsc({ config: { receiptDelayMs: 50 } });
  service = await startService({
    SMS_RUN_WORKERS: "true",
    SMS_CARRIER: "smpp",
    SMS_SMPP_URL: smsc.url,
    SMS_SMPP_BINDS: "2",
    SMS_SMPP_WINDOW: "7",
  });
  consoleUrl = service.consoleUrl ?? "";
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await service?.close();
  await smsc?.stop();
});

/** The test SMSC refuses numbers starting 999 and ending in 1 (ESME_RSUBMITFAIL). */
const REFUSED_BY_SMSC = "+9990000001";
const utcDay = (offsetDays = 0) =>
  new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);

/** Reloads `page` until the table named `name` passes `check` (pages are written every 5 s). */
async function untilTable(
  page: Page,
  name: string,
  check: (rows: (string | null)[][]) => void | Promise<void>,
  timeout = 20_000,
): Promise<(string | null)[][]> {
  return vi.waitFor(
    async () => {
      await page.reload();
      const rows = await tableCells(page, name);
      await check(rows);
      return rows;
    },
    { timeout, interval: 500 },
  );
}

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

  it("assigns and releases a number", async () => {
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

    await context.close();
  });

  it("shows usage per account and day from the usage rows, charged and refunded, in a range and in pages", async () => {
    const account = await service.createAccount();
    await postJson(`${service.baseUrl}/sms`, { ...account, to: "+15550100200", text: "hi" });
    await postJson(`${service.baseUrl}/sms`, { ...account, to: REFUSED_BY_SMSC, text: "hi" });
    const context = await browser.newContext();
    const page = await signIn(context);
    await page.getByRole("link", { name: "Usage" }).click();
    await page.getByLabel("Account's API key").fill(account.apiKey);
    await page.getByRole("button", { name: "Show" }).click();
    // The message the SMSC refused ends SEND_ERROR and is refunded.
    const usage = await untilTable(page, "Usage per account and day", (rows) =>
      expect(rows).toEqual([[utcDay(), account.apiKey, "2", "2", "2", "1"]]),
    );
    expect(usage).toHaveLength(1);
    await shot(page, "usage");

    // Read from the rows kept per account, day and country (a message's own documents are not
    // read): one account's 60 past days, two countries on each, in pages of PAGE_SIZE days.
    const busy = "b".repeat(24);
    const days = Array.from({ length: 60 }, (_, i) =>
      new Date(Date.UTC(2025, 0, 1) + i * 86_400_000).toISOString().slice(0, 10),
    );
    await service.store.usage.insertMany(
      days.flatMap((day) =>
        ["DE", "FR"].map((country) => ({
          _id: `${busy}/${day}/${country}`,
          accountId: busy,
          day,
          country,
          messages: 3,
          parts: 4,
          chargedMicros: 2_500_000,
          refundedMicros: 500_000,
        })),
      ),
    );
    await page.getByLabel("From (UTC)").fill("2025-01-01");
    await page.getByLabel("Until, excluded").fill("2025-12-31");
    await page.getByLabel("Account's API key").fill("");
    await page.getByRole("button", { name: "Show" }).click();
    const first = await tableCells(page, "Usage per account and day");
    expect(first).toHaveLength(PAGE_SIZE);
    expect(first[0]).toEqual([days[59], busy, "6", "8", "5", "1"]);
    await page.getByRole("link", { name: "Next page" }).click();
    const second = await tableCells(page, "Usage per account and day");
    expect(second.map((row) => row[0])).toEqual(days.slice(0, 60 - PAGE_SIZE).reverse());
    await expect(page.getByRole("link", { name: "Next page" }).count()).resolves.toBe(0);

    await page.getByLabel("From (UTC)").fill("2025-03-01");
    await page.getByLabel("Until, excluded").fill("2025-02-01");
    const refused = page.waitForResponse((r) => r.url().includes("/usage?"));
    await page.getByRole("button", { name: "Show" }).click();
    expect((await refused).status()).toBe(400);
    await expect(page.getByRole("alert").textContent()).resolves.toContain(
      "until must be after since",
    );
    // Hand-made addresses: a clear 400 naming the field, never a 500.
    for (const [query, named] of [
      ["since=2025-02-30", "since"],
      ["until=soon", "until"],
      ["page=not-a-token", "page"],
      [`page=${Buffer.from('["2025-01-01",7]').toString("base64url")}`, "page"],
      [`account=${"k".repeat(65)}`, "account"],
    ]) {
      const answer = await context.request.get(`${consoleUrl}/usage?${query}`);
      expect(answer.status(), query).toBe(400);
      expect(await answer.text(), query).toContain(`data-field="${named}"`);
    }
    await context.close();
  });

  it("shows every instance's carriers: binds, window in use, submissions and refusals of the last 15 minutes", async () => {
    const account = await service.createAccount();
    const context = await browser.newContext();
    const page = await signIn(context);
    await page.getByRole("link", { name: "Carriers" }).click();
    const table = "Carriers of every instance";
    // The counts cover the last 15 minutes of the whole service, other tests' sends included: this
    // test asserts what its own sends add to them, once the page shows every submit_sm so far.
    const submitted = async () => (await smsc.pdus({ command: "submit_sm" })).length;
    const settled = async (rows: (string | null)[][]) => {
      expect(rows[0]?.[6]).toBe("0 / 14");
      expect(rows[0]?.[7]).toBe(String(await submitted()));
    };
    const counts = (rows: (string | null)[][]) =>
      [7, 8, 9].map((column) => Number(rows[0]?.[column])) as [number, number, number];
    const [submittedBefore, refusedBefore, throttledBefore] = counts(
      await untilTable(page, table, settled),
    );

    // A part the SMSC is slow to answer is in the window while the state is written.
    await smsc.configure({ answerDelayMs: 7_000 });
    await postJson(`${service.baseUrl}/sms`, { ...account, to: "+4915112345670", text: "slow" });
    const busy = await untilTable(page, table, (rows) => expect(rows[0]?.[6]).toBe("1 / 14"));
    expect(busy).toHaveLength(1);
    expect(busy[0]?.slice(2, 6)).toEqual(["smpp", "bound", "#1 bound, #2 bound", "—"]);
    await smsc.configure({ answerDelayMs: 0 });

    // Two parts the SMSC refuses: with the slow one, three submissions and two refusals.
    await postJson(`${service.baseUrl}/sms`, { ...account, to: REFUSED_BY_SMSC, text: "no" });
    await postJson(`${service.baseUrl}/sms`, { ...account, to: REFUSED_BY_SMSC, text: "not" });
    await vi.waitFor(async () => expect(await submitted()).toBe(submittedBefore + 3), 15_000);
    const rows = await untilTable(page, table, (r) => {
      expect(r[0]?.[6]).toBe("0 / 14");
      expect(r[0]?.[8]).toBe(String(refusedBefore + 2));
    });
    expect(counts(rows)).toEqual([submittedBefore + 3, refusedBefore + 2, throttledBefore]);
    await shot(page, "carriers");
    await context.close();
  });

  it("lists what the toll-fraud guard flagged or refused, filtered by account", async () => {
    const blocked = await service.createAccount();
    const watched = await service.createAccount();
    await service.admin.setRiskOverrides(
      { apiKey: blocked.apiKey, overrides: { mode: "block", max: 2 } },
      adminHeaders,
    );
    await service.admin.setRiskOverrides(
      { apiKey: watched.apiKey, overrides: { mode: "monitor", max: 2 } },
      adminHeaders,
    );
    const pump = async (who: typeof blocked, range: string) => {
      const answers = [];
      for (const n of ["101", "102", "103"])
        answers.push(
          (await postJson(`${service.baseUrl}/sms`, { ...who, to: `${range}${n}`, text: "code" }))
            .status,
        );
      return answers;
    };
    expect(await pump(blocked, "+4917000000")).toEqual([200, 200, 400]);
    expect(await pump(watched, "+4917100000")).toEqual([200, 200, 200]);

    const context = await browser.newContext();
    const page = await signIn(context);
    await page.getByRole("link", { name: "Toll fraud" }).click();
    const table = "Flagged or refused by the toll-fraud guard, newest first";
    const all = await untilTable(page, table, (rows) => expect(rows).toHaveLength(2));
    expect(all.map((row) => [row[1], row[2], row[3], row[4], row[5]])).toEqual([
      [watched.apiKey, "4917100000", "+4917100000103", "monitor", "flagged"],
      [blocked.apiKey, "4917000000", "+4917000000103", "block", "refused"],
    ]);
    // A flagged message was accepted: its id is shown; a refused one has none.
    expect(all[0]?.[6]).toMatch(/^\d+$/);
    expect(all[1]?.[6]).toBe("");
    await shot(page, "toll-fraud");
    await page.getByLabel("Account's API key").fill(blocked.apiKey);
    await page.getByRole("button", { name: "Show" }).click();
    const mine = await tableCells(page, table);
    expect(mine.map((row) => [row[1], row[5]])).toEqual([[blocked.apiKey, "refused"]]);
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
