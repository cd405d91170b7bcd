/**
 * Defect 6: a write whose answer is lost (the connection drops after the server stored it, or
 * before it got there) has an unknown outcome. It is never answered 200, never taken as "nothing
 * failed": the client gets 503 with Retry-After, and the settler charges exactly what was stored.
 */
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OUTCOME_UNKNOWN } from "../../src/services/database-deadlines.ts";
import { is } from "../support/fault-proxy.ts";
import {
  type FaultyService,
  post,
  SHORT_DEADLINES,
  startFaultyService,
} from "../support/faulty-database.ts";
import { eventually } from "../support/fixtures.ts";

let faulty: FaultyService;
let account: { apiKey: string; apiSecret: string };
const logLines: string[] = [];
const logStream = new Writable({
  write(chunk: Buffer, _encoding, done) {
    logLines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    done();
  },
});

beforeAll(async () => {
  faulty = await startFaultyService({ ...SHORT_DEADLINES, LOG_LEVEL: "warn" }, { logStream });
  account = await faulty.service.createAccount({ credit: 100 });
});
afterAll(() => faulty?.close());

/** Credit (in micros) once the settler has left nothing pending. */
async function settledCredit(): Promise<number> {
  await eventually(async () => {
    const doc = await faulty.direct.accounts.findOne({ _id: account.apiKey });
    return doc?.pendingCharges.length === 0;
  }, 20_000);
  const doc = await faulty.direct.accounts.findOne({ _id: account.apiKey });
  return (doc?.creditMicros ?? Number.NaN) / 1_000_000;
}

const sms = (text: string) => ({ to: "+4915112345678", text });

describe("a single send whose insert has an unknown outcome", () => {
  it("stored, answer lost: 503 with Retry-After, then charged once for the stored message", async () => {
    const before = await settledCredit();
    const cut = faulty.proxy.once(is("insert", "messages"), "cut-after");
    const answer = await post(`${faulty.service.baseUrl}/sms`, sms("lost answer"), account);
    const command = await cut;

    expect(answer.status).toBe(503);
    expect(answer.retryAfter).toMatch(/^\d+$/);
    expect(answer.body).toEqual({ errors: { request: [OUTCOME_UNKNOWN] } });
    const id = command.body.documents?.[0]?._id ?? (await storedIdsWithText("lost answer"))[0];
    expect(await faulty.direct.messages.countDocuments({ _id: id })).toBe(1);
    expect(await settledCredit()).toBe(before - 1);
  });

  it("the 503 leaves its cause in the log, for the operator (the caller sees none of it)", async () => {
    const before = logLines.length;
    const cut = faulty.proxy.once(is("insert", "messages"), "cut-after");
    const answer = await post(`${faulty.service.baseUrl}/sms`, sms("logged cause"), account);
    await cut;

    expect(answer.status).toBe(503);
    const logged = logLines
      .slice(before)
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.msg?.startsWith("answered UNAVAILABLE"));
    expect(logged).toHaveLength(1);
    expect(logged[0].rpc).toBe("sms.v1.MessagingService/SendMessage");
    expect(logged[0].err.type).toBe("OutcomeUnknown");
    expect(JSON.stringify(answer.body)).not.toContain("OutcomeUnknown");
  });

  it("never stored: 503, then the charge comes back", async () => {
    const before = await settledCredit();
    const cut = faulty.proxy.once(is("insert", "messages"), "cut-before");
    const answer = await post(`${faulty.service.baseUrl}/sms`, sms("never stored"), account);
    await cut;

    expect(answer.status).toBe(503);
    expect(answer.body.errors.request).toHaveLength(1);
    expect(await storedIdsWithText("never stored")).toEqual([]);
    expect(await settledCredit()).toBe(before);
  });

  it("the debit's own answer lost: 503, and the debit is refunded", async () => {
    const before = await settledCredit();
    const cut = faulty.proxy.once(is("findAndModify", "accounts"), "cut-after");
    const answer = await post(`${faulty.service.baseUrl}/sms`, sms("debit lost"), account);
    await cut;

    expect(answer.status).toBe(503);
    expect(await storedIdsWithText("debit lost")).toEqual([]);
    expect(await settledCredit()).toBe(before);
  });
});

describe("a batch whose commit has an unknown outcome", () => {
  const batch = (name: string) => ({
    name,
    messages: [sms(`${name} 1`), sms(`${name} 2`), { to: "+4915112345679", text: "x".repeat(200) }],
  });

  it("committed, answer lost: 503 in the batch's string shape, then charged for all of it", async () => {
    const before = await settledCredit();
    const cut = faulty.proxy.once(is("insert", "batches"), "cut-after");
    const answer = await post(`${faulty.service.baseUrl}/sms-batch`, batch("kept"), account);
    await cut;

    expect(answer.status).toBe(503);
    expect(answer.retryAfter).toMatch(/^\d+$/);
    expect(answer.body).toEqual({ errors: { request: OUTCOME_UNKNOWN } });
    const stored = await faulty.direct.batches.findOne({ name: "kept" });
    expect(stored?.acceptedCount).toBe(3);
    expect(await faulty.direct.messages.countDocuments({ batchId: stored?._id })).toBe(3);
    // Four parts: one each for the first two, two for the 200-character text.
    expect(await settledCredit()).toBe(before - 4);
  });

  it("never committed: 503, then its messages are removed and the charge comes back", async () => {
    const before = await settledCredit();
    const cut = faulty.proxy.once(is("insert", "batches"), "cut-before");
    const answer = await post(`${faulty.service.baseUrl}/sms-batch`, batch("dropped"), account);
    await cut;

    expect(answer.status).toBe(503);
    expect(await settledCredit()).toBe(before);
    expect(await storedIdsWithText("dropped 1")).toEqual([]);
    expect(await faulty.direct.batches.countDocuments({ name: "dropped" })).toBe(0);
  });
});

async function storedIdsWithText(text: string): Promise<number[]> {
  const docs = await faulty.direct.messages.find({ text }, { projection: { _id: 1 } }).toArray();
  return docs.map((d) => d._id);
}
