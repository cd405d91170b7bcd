/**
 * The service as `npm start` runs it with SMS_CARRIER=smpp (build() with the configuration read
 * from the environment), bound to the test SMSC: a message sent through REST ends DELIVERED with
 * its webhooks, and the operator's /health (on the metrics port) shows the binds and the window
 * in use; what the carrier said of a failed message (`carrierStatus`) in GetMessage and on the
 * dashboard's message page; sms_smpp_malformed_pdus_total on /metrics.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, it } from "vitest";
import { MessagingService } from "../../../gen/sms/v1/messaging_pb.ts";
import { MessageStatus } from "../../../gen/sms/v1/types_pb.ts";
import { basicAuthorization } from "../../../src/services/authentication.ts";
import { page, signIn } from "../../support/dashboard-forms.ts";
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

it("shows what the carrier said of a failed message in GetMessage and on the dashboard", async () => {
  const account = await service.createAccount({});
  // The test SMSC answers numbers ending in 2 with stat:UNDELIV err:027.
  const sent = await postJson(`${service.baseUrl}/sms`, {
    ...account,
    to: "+9995550002",
    text: "x",
  });
  expect(sent.status).toBe(200);
  const messaging = createClient(
    MessagingService,
    createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
  );
  const headers = { authorization: basicAuthorization(account.apiKey, account.apiSecret) };
  const read = async () =>
    (await messaging.getMessage({ id: BigInt(sent.body.id) }, { headers })).message;
  await waitFor(async () => (await read())?.status === MessageStatus.DELIVERY_ERROR);
  const message = await read();
  expect(message?.carrierStatus).toMatchObject({ stat: "UNDELIV", err: "027" });
  expect(message?.carrierStatus?.doneTime).toMatch(/^\d{10}$/);

  const cookie = await signIn(service.baseUrl, account);
  const html = await (await page(service.baseUrl, cookie, `/messages/${sent.body.id}`)).text();
  expect(html).toMatch(
    /data-testid="carrier-status">stat <strong>UNDELIV<\/strong>, err 027, done \d{10}</,
  );
});

it("counts malformed PDUs per carrier on /metrics, from 0", async () => {
  const text = await (await fetch(service.metricsUrl ?? "")).text();
  expect(text).toContain('sms_smpp_malformed_pdus_total{carrier="smpp"} 0');
});
