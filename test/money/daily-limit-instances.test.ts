/**
 * The daily spend limit across instances (docs/design.md "Money", "Spend controls"): two
 * instances on one database, concurrent sends and batches through both, and not one message more
 * than the limit allows is charged; what was refused stored and charged nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";

let database: TestDatabase;
let first: RunningService;
let second: RunningService;
beforeAll(async () => {
  database = await testDatabase();
  first = await startService({ SMS_RATE_LIMIT_RPS: "0" }, database);
  second = await startService({ SMS_RATE_LIMIT_RPS: "0" }, database);
});
afterAll(async () => {
  await first?.close();
  await second?.close();
  await database?.close();
});

describe("the daily limit on two instances", () => {
  it("concurrent sends and batches through both never pass it, by even one message", async () => {
    const account = await first.createAccount({ credit: 1000 });
    const set = await fetch(`${second.baseUrl}/account/spend-controls`, {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...account, dailySpendLimit: 37 }),
    });
    expect(set.status).toBe(200);
    const sends = Array.from({ length: 60 }, (_, i) =>
      postJson(`${(i % 2 ? first : second).baseUrl}/sms`, {
        ...account,
        to: `+49151${String(20_000_000 + i)}`,
        text: "within the limit?",
      }),
    );
    const batches = Array.from({ length: 4 }, (_, i) =>
      postJson(`${(i % 2 ? second : first).baseUrl}/sms-batch`, {
        ...account,
        messages: Array.from({ length: 3 }, (_, j) => ({
          to: `+49151${String(30_000_000 + 10 * i + j)}`,
          text: "three at once",
        })),
      }),
    );
    const answers = await Promise.all([...sends, ...batches]);
    for (const answer of answers) expect([200, 402]).toContain(answer.status);
    const accepted = answers
      .filter((a) => a.status === 200)
      .reduce((n, a) => n + (a.body.acceptedCount ?? 1), 0);

    const stored = await first.store.messages.countDocuments({ accountId: account.apiKey });
    const doc = await first.store.accounts.findOne({ _id: account.apiKey });
    const today = new Date().toISOString().slice(0, 10);
    expect(stored).toBe(accepted);
    expect(accepted).toBeLessThanOrEqual(37);
    // Refused only when the next one would not fit: 37 of 1 each and 3 at a time leave at most 2.
    expect(accepted).toBeGreaterThanOrEqual(35);
    expect(doc?.creditMicros).toBe((1000 - accepted) * 1_000_000);
    expect(doc?.spentByDay?.[today]).toBe(accepted * 1_000_000);
  });
});
