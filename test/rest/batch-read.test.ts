/**
 * GET /sms-batch/{id} reads a batch's messages once, and only the fields it shows (figure 3): the
 * database commands the service sends are watched with the driver's own command monitoring, on
 * the client the service runs on. The counters are those of the statuses listed.
 */
import { create, isMessage } from "@bufbuild/protobuf";
import type { CommandStartedEvent, Document } from "mongodb";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MessageSchema, MessageStatus } from "../../gen/sms/v1/types_pb.ts";
import { messageSummary } from "../../src/services/message-resources.ts";
import { type TestDatabase, testDatabase, testServer } from "../support/database.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";
import { type Account, phoneNumbers, withQuery } from "./helpers.ts";

let base: TestDatabase;
let monitored: MongoClient;
let service: RunningService;
let account: Account;
const commands: CommandStartedEvent[] = [];

beforeAll(async () => {
  base = await testDatabase({ label: "batch_read" });
  monitored = new MongoClient(testServer().uri, { monitorCommands: true });
  await monitored.connect();
  monitored.on("commandStarted", (event) => commands.push(event));
  service = await startService({}, { ...base, client: monitored, db: monitored.db(base.name) });
  account = await service.createAccount({ credit: 1_000_000 });
});
afterAll(async () => {
  await service?.close();
  await monitored?.close();
  await base?.close();
});

/** The finds and aggregates on `messages` sent while `action` ran. */
async function messageReads(action: () => Promise<unknown>): Promise<Document[]> {
  commands.length = 0;
  await action();
  return commands
    .filter((c) => ["find", "aggregate", "count"].includes(c.commandName))
    .map((c) => c.command)
    .filter((command) => Object.values(command)[0] === "messages");
}

it("reads the batch's messages once, with only from, to and status, and counts what it lists", async () => {
  const to = phoneNumbers(300);
  const created = await postJson(`${service.baseUrl}/sms-batch`, {
    messages: to.map((number) => ({ to: number, text: "a text that is not read back" })),
    ...account,
  });
  expect(created.status).toBe(200);
  const ids = (await service.store.messages.find({ batchId: created.body.id }).toArray()).map(
    (m) => m._id,
  );
  await service.store.messages.updateMany(
    { _id: { $in: ids.slice(0, 7) } },
    { $set: { status: "DELIVERED" } },
  );
  await service.store.messages.updateMany(
    { _id: { $in: ids.slice(7, 10) } },
    { $set: { status: "SEND_ERROR" } },
  );

  let answer: Awaited<ReturnType<typeof withQuery>> | undefined;
  const reads = await messageReads(async () => {
    answer = await withQuery("GET", `${service.baseUrl}/sms-batch/${created.body.id}`, {
      ...account,
    });
  });
  expect(answer?.status).toBe(200);
  expect(reads).toHaveLength(1);
  expect(reads[0]?.projection).toEqual({ from: 1, to: 1, status: 1 });
  expect(answer?.body.messages).toHaveLength(300);
  expect(answer?.body.messages[0]).toEqual({
    id: ids[0],
    from: "SMSINFO",
    to: to[0],
    status: "DELIVERED",
  });
  expect(answer?.body).toMatchObject({
    totalCount: 300,
    acceptedCount: 300,
    sentCount: 7,
    deliveredCount: 7,
    undeliveredCount: 3,
    isActive: true,
  });
});

it("a summary is the Message create() makes of its four fields", () => {
  const doc = { _id: 12, from: "SMSINFO", to: "+4915112345678", status: "SENT" as const };
  const summary = messageSummary(doc);
  expect(summary).toEqual(
    create(MessageSchema, {
      id: 12n,
      sender: "SMSINFO",
      to: "+4915112345678",
      status: MessageStatus.SENT,
    }),
  );
  expect(isMessage(summary, MessageSchema)).toBe(true);
  // Lists of its own: no two summaries share one.
  expect(messageSummary(doc).segments).not.toBe(summary.segments);
});
