import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StatusName } from "../../src/domain/message-status.ts";
import { page, signIn } from "../support/dashboard-forms.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";

// The overview over plain HTTP against the whole service (worker and simulator running): its
// pages count toward the account's request limit like every request, and its numbers, kept for
// a few seconds (dashboard/recent-counts.ts), follow what the store holds after sends.

let service: RunningService;

beforeAll(async () => {
  service = await startService({
    // Two requests a second, bursts of four.
    SMS_RATE_LIMIT_RPS: "2",
    SMS_RUN_WORKERS: "true",
    SMS_SIM_SEND_DELAY_MS: "20",
    SMS_SIM_RECEIPT_DELAY_MS: "50",
  });
}, 60_000);

afterAll(async () => {
  await service?.close();
});

/** The overview's numbers: the count of each status and the total. */
function numbersOf(html: string): Record<string, number> {
  const numbers: Record<string, number> = {};
  for (const [, status, count] of html.matchAll(/<td data-status="([A-Z_]+)">(\d+)\+?<\/td>/g)) {
    numbers[status as string] = Number(count);
  }
  numbers.total = Number(/data-testid="total">(\d+)</.exec(html)?.[1]);
  return numbers;
}

describe("dashboard overview", () => {
  it("counts toward the account's request limit: concurrent views beyond it get the 429 page", async () => {
    const account = await service.createAccount();
    const cookie = await signIn(service.baseUrl, account);
    const views = await Promise.all(
      Array.from({ length: 40 }, () => page(service.baseUrl, cookie, "/overview")),
    );
    const statuses = views.map((v) => v.status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    const refused = views.filter((v) => v.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
    const first = refused[0] as Response;
    expect(Number(first.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(first.headers.get("ratelimit-policy")).toBe('"account";q=2;w=1');
    expect(first.headers.get("content-type")).toMatch(/^text\/html/);
    await expect(first.text()).resolves.toContain("too many requests for this account");
    // Another account's allowance is its own.
    const other = await service.createAccount();
    const otherCookie = await signIn(service.baseUrl, other);
    expect((await page(service.baseUrl, otherCookie, "/overview")).status).toBe(200);
  });

  it("shows what the store holds after sends", async () => {
    const account = await service.createAccount();
    const cookie = await signIn(service.baseUrl, account);
    const overview = async () => {
      const response = await page(service.baseUrl, cookie, "/overview");
      // A view refused by the limit is simply tried again.
      return response.status === 200 ? numbersOf(await response.text()) : {};
    };
    const none = {
      ACCEPTED: 0,
      SENT: 0,
      DELIVERED: 0,
      SEND_ERROR: 0,
      DELIVERY_ERROR: 0,
      CANCELED: 0,
    };
    await expect(overview()).resolves.toEqual({ ...none, total: 0 });

    // Three delivered, one refused by the carrier, one undeliverable, one without a receipt.
    const numbers = [
      "+4915100000001",
      "+4915100000002",
      "+4915100000003",
      "+9991234561",
      "+9991234562",
      "+9991234567",
    ];
    const sent = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      messages: numbers.map((to) => ({ to, text: "overview" })),
    });
    expect(sent.status).toBe(200);
    const expected = { ...none, SENT: 1, DELIVERED: 3, SEND_ERROR: 1, DELIVERY_ERROR: 1 };
    const stored = async () => {
      const counts: Record<string, number> = {};
      for (const status of Object.keys(none) as StatusName[]) {
        counts[status] = await service.store.messages.countDocuments({
          accountId: account.apiKey,
          status,
        });
      }
      return counts;
    };
    await expect.poll(stored, { timeout: 20_000, interval: 200 }).toEqual(expected);
    await expect
      .poll(overview, { timeout: 30_000, interval: 1_000 })
      .toEqual({ ...expected, total: 6 });

    // One more: the kept counts give way to the new ones.
    const one = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+4915100000004",
      text: "overview",
    });
    expect(one.status).toBe(200);
    const after = { ...expected, DELIVERED: 4 };
    await expect.poll(stored, { timeout: 20_000, interval: 200 }).toEqual(after);
    await expect
      .poll(overview, { timeout: 30_000, interval: 1_000 })
      .toEqual({ ...after, total: 7 });
  });

  it("charts the last 30 days (messages and amount per day) and lists countries", async () => {
    const account = await service.createAccount({ credit: 50 });
    const cookie = await signIn(service.baseUrl, account);
    const sent = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      messages: [
        { to: "+4915100000011", text: "a" },
        { to: "+4915100000012", text: "b" },
        { to: "+33612345678", text: "c" },
        { to: "+9991234561", text: "refused by the carrier, refunded" },
      ],
    });
    expect(sent.status).toBe(200);
    const today = new Date().toISOString().slice(0, 10);
    const month = async () => {
      const response = await page(service.baseUrl, cookie, "/overview");
      if (response.status !== 200) return undefined;
      const html = await response.text();
      const day = new RegExp(
        `<tr data-day="${today}"><th scope="row">${today}</th><td>(\\d+)</td><td>([\\d.]+)</td>`,
      ).exec(html);
      const countries = [...html.matchAll(/<tr data-country="([A-Z]+)">.*?<td>(\d+)<\/td>/g)].map(
        (m) => [m[1], Number(m[2])],
      );
      return {
        charts: (html.match(/data-testid="month-(messages|amount)"/g) ?? []).length,
        columns: (html.match(/class="bar day"/g) ?? []).length,
        today: day ? [Number(day[1]), day[2]] : undefined,
        countries,
      };
    };
    // Four charged, the carrier's refusal refunded: 3 as the day's amount.
    await expect.poll(month, { timeout: 30_000, interval: 1_000 }).toEqual({
      charts: 2,
      columns: 60,
      today: [4, "3"],
      countries: [
        ["DE", 2],
        ["FR", 1],
        ["ZZ", 1],
      ],
    });
  });
});
