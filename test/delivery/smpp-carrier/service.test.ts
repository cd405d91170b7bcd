/**
 * The service as `npm start` runs it with SMS_CARRIER=smpp (build() with the configuration read
 * from the environment), bound to the test SMSC: a message sent through REST ends DELIVERED with
 * its webhooks, and the operator's /health (on the metrics port) shows the binds and the window
 * in use.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { getJson, postJson, type RunningService, startService } from "../../support/service.ts";
import { waitFor } from "../../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../../support/smsc.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../../support/webhook-receiver.ts";

let smsc: TestSmsc;
let service: RunningService;
let receiver: WebhookReceiver;

beforeAll(async () => {
  smsc = await startSmsc({ config: { receiptDelayMs: 50 } });
  receiver = await startWebhookReceiver();
  service = await startService(
    {
      SMS_RUN_WORKERS: "true",
      SMS_CARRIER: "smpp",
      SMS_SMPP_URL: smsc.url,
      SMS_SMPP_BINDS: "2",
      SMS_SMPP_WINDOW: "7",
      SMS_SMPP_TPS: "100",
      SMS_SMPP_SYSTEM_TYPE: "sms",
      SMS_WEBHOOK_ALLOW_PRIVATE: "true",
    },
    undefined,
    { metrics: true },
  );
});

afterAll(async () => {
  await service?.close();
  await receiver?.close();
  await smsc?.stop();
});

it("delivers a message sent through REST, with its webhooks", async () => {
  const account = await service.createAccount({ statusUrl: `${receiver.baseUrl}/status` });
  const sent = await postJson(`${service.baseUrl}/sms`, {
    ...account,
    to: "+4915112345678",
    text: "Hallo über SMPP",
  });
  expect(sent.status).toBe(200);
  const id = String(sent.body.id);
  await receiver.waitFor(
    (requests) => requests.some((r) => r.query.id === id && r.query.status === "DELIVERED"),
    20_000,
  );
  expect(
    receiver
      .succeeded()
      .filter((r) => r.query.id === id)
      .map((r) => r.query.status),
  ).toEqual(["ACCEPTED", "SENT", "DELIVERED"]);
  const [submit] = await smsc.pdus({ command: "submit_sm" });
  expect(submit).toMatchObject({ destination_addr: "4915112345678", data_coding: 3 });
  const binds = await smsc.pdus({ command: "bind_transceiver" });
  expect(binds.map((b) => b.system_type)).toEqual(["sms", "sms"]);
});

it("shows the binds and the window in use in the operator's /health", async () => {
  const health = () => getJson(service.operatorHealthUrl ?? "");
  await waitFor(async () => (await health()).body.carrier?.state === "bound");
  const { status, body } = await health();
  expect(status).toBe(200);
  expect(body).toMatchObject({
    status: "ok",
    mongodb: "reachable",
    carrier: {
      name: "smpp",
      state: "bound",
      smsc: `smpp://test@127.0.0.1:${smsc.port}`,
      window: { size: 14, inUse: 0 },
      partsPerSecond: 200,
    },
  });
  expect(body.carrier.binds).toHaveLength(2);
  expect(body.carrier.binds[0]).toMatchObject({ bind: 1, state: "bound", window: 7, tps: 100 });
  expect(JSON.stringify(body)).not.toContain(smsc.password);

  await smsc.drop();
  await waitFor(async () => (await health()).body.carrier?.state !== "bound", 5_000);
  await waitFor(async () => (await health()).body.carrier?.state === "bound", 10_000);
});
