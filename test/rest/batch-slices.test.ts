/**
 * A batch's own work after parsing (checking, segmenting, pricing, building the documents) lets
 * other requests in (issue 25, 2.1): while the largest kind of batch is worked, /health/live is
 * answered between the database calls that border that work, and between the chunks its messages
 * are inserted in. The order of events is read inside
 * the process: the handlers Fastify starts (its diagnostics channel) and the commands the
 * service's own MongoDB client sends (the driver's command monitoring). No time is measured.
 */
import diagnostics from "node:diagnostics_channel";
import { BSON, MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type TestDatabase, testDatabase, testServer } from "../support/database.ts";
import { type RunningService, startService } from "../support/service.ts";
import { type Account, phoneNumbers } from "./helpers.ts";

let base: TestDatabase;
let monitored: MongoClient;
let service: RunningService;
let account: Account;
const events: string[] = [];
/** The size of each insert into messages: documents and bytes of BSON. */
const inserts: { count: number; bytes: number }[] = [];

const onHandler = (message: unknown) => {
  const { route } = message as { route: { url: string; method: string } };
  if (route.url === "/health/live") events.push("health");
  if (route.url === "/sms-batch" && route.method === "POST") events.push("batch handler");
};

beforeAll(async () => {
  base = await testDatabase({ label: "batch_slices" });
  monitored = new MongoClient(testServer().uri, { monitorCommands: true });
  await monitored.connect();
  monitored.on("commandStarted", (e) => {
    events.push(`started ${e.commandName} ${String(Object.values(e.command)[0])}`);
    if (e.commandName === "insert" && e.command.insert === "messages") {
      const documents = e.command.documents as object[];
      let bytes = 0;
      for (const doc of documents) bytes += BSON.calculateObjectSize(doc);
      inserts.push({ count: documents.length, bytes });
    }
  });
  monitored.on("commandSucceeded", (e) => events.push(`done ${e.commandName}`));
  monitored.on("commandFailed", (e) => events.push(`done ${e.commandName}`));
  service = await startService({}, { ...base, client: monitored, db: monitored.db(base.name) });
  account = await service.createAccount({ credit: 1_000_000_000 });
  diagnostics.subscribe("tracing:fastify.request.handler:start", onHandler);
});
afterAll(async () => {
  diagnostics.unsubscribe("tracing:fastify.request.handler:start", onHandler);
  await service?.close();
  await monitored?.close();
  await base?.close();
});

/** Whether a health answer began after the last database answer before `end`, and before it. */
function healthBetweenCalls(end: number, from: number): boolean {
  let start = from;
  for (let i = from; i < end; i++) if (events[i]?.startsWith("done ")) start = i;
  return events.slice(start, end).includes("health");
}

it("answers /health/live while a 10000-message batch of long texts is checked and built", async () => {
  const text = "é".repeat(1530); // 10 parts of UCS-2 each: the most segmenting work
  const to = phoneNumbers(10_000);
  const body = JSON.stringify({
    ...account,
    messages: to.map((number) => ({ to: number, text })),
  });
  let done = false;
  // Health requests are kept waiting at the service from three connections at a time, so any
  // turn of its event loop finds one to answer.
  const probe = async () => {
    while (!done) {
      const live = await fetch(`${service.baseUrl}/health/live`);
      expect(live.status).toBe(200);
      await live.arrayBuffer();
    }
  };
  events.length = 0;
  inserts.length = 0;
  const batch = fetch(`${service.baseUrl}/sms-batch`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  }).finally(() => {
    done = true;
  });
  const probes = [probe(), probe(), probe()];
  const answer = await batch;
  await Promise.all(probes);
  expect(answer.status).toBe(200);
  const result = (await answer.json()) as { acceptedCount: number; errors: unknown[] };
  expect(result.acceptedCount).toBe(10_000);
  expect(result.errors ?? []).toEqual([]);

  const handler = events.indexOf("batch handler");
  expect(handler).toBeGreaterThanOrEqual(0);
  // The messages are checked between the handler's start and the ids' reservation…
  const reserve = events.findIndex((e, i) => i > handler && e === "started findAndModify counters");
  expect(reserve).toBeGreaterThan(handler);
  expect(healthBetweenCalls(reserve, handler)).toBe(true);
  // …and their documents are built before the charge.
  const charge = events.findIndex((e, i) => i > reserve && e.endsWith(" accounts"));
  expect(charge).toBeGreaterThan(reserve);
  expect(healthBetweenCalls(charge, reserve)).toBe(true);
  expect(events.indexOf("started insert messages")).toBeGreaterThan(charge);
  // The messages go in chunks of at most 1000 and 1 MiB, one issued per turn (the driver
  // serialises a chunk in one piece when it is issued): a health answer comes between them.
  expect(inserts.reduce((sum, insert) => sum + insert.count, 0)).toBe(10_000);
  expect(inserts.length).toBeGreaterThanOrEqual(10);
  for (const insert of inserts) {
    expect(insert.count).toBeLessThanOrEqual(1000);
    expect(insert.bytes).toBeLessThanOrEqual(1024 * 1024);
  }
  const firstInsert = events.indexOf("started insert messages");
  const lastInsert = events.lastIndexOf("started insert messages");
  expect(events.slice(firstInsert, lastInsert)).toContain("health");
});
