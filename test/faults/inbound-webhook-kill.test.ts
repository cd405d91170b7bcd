/**
 * Inbound webhooks across a kill -9 of the instance sending them (issue 26 item 4: crash-safe like
 * status webhooks). The service (simulator carrier) takes inbound messages through
 * AdminService.SimulateInbound while the account's receiver hangs, so the first message of each
 * sender is claimed and in flight and the later ones wait behind it; the process is killed with
 * SIGKILL and started again: every message is delivered (the claimed ones once their lease runs
 * out, the waiting ones after them), in order per sender.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { AdminService } from "../../gen/sms/admin/v1/admin_pb.ts";
import { inboundMessagesCollection } from "../../src/store/inbound-messages.ts";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { eventually } from "../support/fixtures.ts";
import { ADMIN_TOKEN } from "../support/service.ts";
import { type ServiceProcess, startServiceProcess } from "../support/service-process.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

const ENV = {
  SMS_CARRIER: "simulator",
  SMS_WEBHOOK_ALLOW_PRIVATE: "true",
  // Requests to the hanging receiver stay in flight until the kill.
  SMS_WEBHOOK_TIMEOUT_MS: "60000",
  SMS_WEBHOOK_RETRY_SCHEDULE: "1s,1s,1s,1s,1s",
};
const NUMBER = "+4930555111";
const headers = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

let database: TestDatabase;
let receiver: WebhookReceiver;
let service: ServiceProcess | undefined;

beforeAll(async () => {
  database = await testDatabase({ label: "inbound-kill" });
  receiver = await startWebhookReceiver({ delayMs: 600_000 });
});
afterEach(async () => {
  await service?.kill();
  service = undefined;
});
afterAll(async () => {
  await receiver?.close();
  await database?.close();
});

const admin = (baseUrl: string) =>
  createClient(AdminService, createConnectTransport({ baseUrl, httpVersion: "1.1" }));

it("loses no inbound webhook when the notifying instance is killed, and keeps their order per sender", async () => {
  const db = database.db;
  service = await startServiceProcess("source", db.databaseName, ENV);
  const { apiKey } = await service.createAccount(1);
  const first = admin(service.baseUrl);
  await first.assignNumber({ apiKey, number: NUMBER }, headers);
  await first.setInboundUrl({ apiKey, inboundUrl: `${receiver.baseUrl}/inbound` }, headers);
  const texts = ["X1", "Y1", "X2", "X3", "Y2"];
  for (const text of texts) {
    const sender = text.startsWith("X") ? "+4915100000031" : "+4915100000032";
    await first.simulateInbound({ sender, to: NUMBER, text }, headers);
  }
  // The first message of each sender is in flight; the others wait behind them.
  await receiver.waitFor((requests) => requests.length >= 2, 30_000);
  service.signal("SIGKILL");
  expect((await service.exited).signal).toBe("SIGKILL");
  const inFlight = receiver.requests.map((r) => (JSON.parse(r.body) as { text: string }).text);
  expect(inFlight.sort()).toEqual(["X1", "Y1"]);

  receiver.set({ delayMs: 0 });
  service = await startServiceProcess("source", db.databaseName, ENV);
  const inbound = inboundMessagesCollection(db);
  await eventually(
    async () => (await inbound.countDocuments({ "webhook.state": "delivered" })) === texts.length,
    90_000,
  );
  const received = receiver.requests.map((r) => ({
    text: (JSON.parse(r.body) as { text: string }).text,
    answered: r.answered,
  }));
  // Every message got through.
  const delivered = received.filter((r) => r.answered === 200).map((r) => r.text);
  expect([...delivered].sort()).toEqual([...texts].sort());
  // Per sender, nothing was sent before the previous message got through.
  for (const sender of ["X", "Y"]) {
    const own = received.filter((r) => r.text.startsWith(sender));
    const seen = new Set<string>();
    for (const r of own) {
      const previous = `${sender}${Number(r.text.slice(1)) - 1}`;
      if (r.text !== `${sender}1`)
        expect(seen.has(previous), `${r.text} after ${previous}`).toBe(true);
      if (r.answered === 200) seen.add(r.text);
    }
  }
}, 180_000);
