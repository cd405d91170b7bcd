/**
 * Metrics as a real Prometheus sees them (issue 16 item 3): Debian's prometheus scrapes a running
 * service (workers on, simulator carrier, a webhook receiver that fails once) every second while
 * the test sends traffic; the series the design names exist and move, read back through
 * Prometheus's query API (the accepted-parts counter rises by exactly the parts sent). The alert
 * rules load and evaluate; `promtool check metrics` reports nothing about the `sms_` metrics;
 * /metrics holds no phone number, credential, URL or account.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestDatabase, testDatabase } from "../support/database.ts";
import { eventually } from "../support/fixtures.ts";
import {
  prometheusTestsSkipped,
  requirePrometheus,
  startPrometheus,
  type TestPrometheus,
} from "../support/prometheus.ts";
import { getJson, postJson, type RunningService, startService } from "../support/service.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

const RULES = resolve(import.meta.dirname, "../../deploy/prometheus/alerts.yml");
// `npm test` installs Prometheus where it may (scripts/system-tools.sh); without it this fails,
// saying how to install it, unless SMS_TEST_SKIP_PROMETHEUS=1 asks to skip it.
describe.skipIf(prometheusTestsSkipped)("the service scraped by Prometheus", () => {
  let database: TestDatabase;
  let service: RunningService;
  let receiver: WebhookReceiver;
  let prometheus: TestPrometheus;
  let account: { apiKey: string; apiSecret: string };

  beforeAll(async () => {
    requirePrometheus();
    database = await testDatabase({ label: "prometheus" });
    receiver = await startWebhookReceiver({ failFirst: 1 });
    service = await startService(
      {
        SMS_RUN_WORKERS: "true",
        SMS_SIM_SEND_DELAY_MS: "20",
        SMS_SIM_RECEIPT_DELAY_MS: "50",
        SMS_WEBHOOK_ALLOW_PRIVATE: "true",
        SMS_WEBHOOK_RETRY_SCHEDULE: "200ms,400ms,800ms",
      },
      database,
      { metrics: true },
    );
    account = await service.createAccount({ credit: 100, statusUrl: `${receiver.baseUrl}/s` });
    prometheus = await startPrometheus(new URL(service.metricsUrl ?? "").host, {
      ruleFiles: [RULES],
    });
    // A scrape has landed: the target is up and the counter is there, still at 0.
    await eventually(async () => (await prometheus.value('up{job="sms"}')) === 1);
    await eventually(async () => (await prometheus.value("sms_parts_accepted_total")) === 0);
  }, 60_000);

  afterAll(async () => {
    await prometheus?.stop();
    await service?.close();
    await receiver?.close();
    await database?.close();
  });

  it("counts exactly the messages, parts and credit accepted and the messages refused", async () => {
    const to = "+4915112345678";
    for (let i = 0; i < 3; i++) {
      expect(
        (await postJson(`${service.baseUrl}/sms`, { ...account, to, text: `m${i}` })).status,
      ).toBe(200);
    }
    // 200 GSM characters: two parts.
    const long = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to,
      text: "a".repeat(200),
    });
    expect(long.status).toBe(200);
    expect(
      (await postJson(`${service.baseUrl}/sms`, { ...account, to: "nope", text: "x" })).status,
    ).toBe(400);
    const batch = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      messages: [
        { to, text: "b1" },
        { to, text: "b2" },
        { to: "12", text: "bad number" },
      ],
    });
    expect(batch.status).toBe(200);

    await eventually(async () => (await prometheus.value("sms_parts_accepted_total")) === 7);
    expect(await prometheus.value("sms_messages_accepted_total")).toBe(6);
    expect(await prometheus.value("sms_credit_charged_total")).toBe(7);
    expect(await prometheus.value('sms_messages_rejected_total{reason="invalid"}')).toBe(2);
    const sends = await prometheus.value(
      'sum(sms_http_request_duration_seconds_count{route="/sms",method="POST"})',
    );
    expect(sends).toBe(5);
    expect(
      await prometheus.value(
        'sms_http_request_duration_seconds_count{route="/sms",method="POST",status_code="400"}',
      ),
    ).toBe(1);
    expect(
      await prometheus.value(
        'sms_rpc_duration_seconds_count{procedure="sms.admin.v1.AdminService/CreateAccount",code="ok"}',
      ),
    ).toBe(1);
  });

  it("shows the delivery, the webhooks and the change stream moving", async () => {
    // Every accepted message DELIVERED and notified (ACCEPTED, SENT, DELIVERED each).
    await receiver.waitFor(
      (requests) =>
        requests.filter((r) => r.query.status === "DELIVERED" && r.answered === 200).length === 6,
      30_000,
    );
    await eventually(
      async () =>
        (await prometheus.value('sms_carrier_submitted_parts_total{result="accepted"}')) === 7,
    );
    await eventually(
      async () =>
        (await prometheus.value('sms_webhook_attempts_total{outcome="delivered"}')) === 18,
    );
    expect(await prometheus.value('sms_webhook_attempts_total{outcome="retry"}')).toBe(1);
    expect(await prometheus.value("sum(sms_webhook_attempt_duration_seconds_count)")).toBe(19);
    expect(await prometheus.value("sms_carrier_submit_duration_seconds_count")).toBeGreaterThan(0);
    expect(await prometheus.value("sms_change_stream_events_total")).toBeGreaterThan(0);
    expect(await prometheus.value("sms_change_stream_delay_seconds_count")).toBeGreaterThan(0);
    expect(
      await prometheus.value(
        'sum(sms_database_operation_duration_seconds_count{collection="messages",operation=~"insertOne|insertMany"})',
      ),
    ).toBeGreaterThan(0);
    expect(await prometheus.value("sms_database_up")).toBe(1);
    expect(await prometheus.value("sms_carrier_bound")).toBe(1);
    expect(await prometheus.value("sms_carrier_window_size")).toBeGreaterThan(0);
    expect(await prometheus.value("sms_carrier_window_in_use")).toBeGreaterThanOrEqual(0);
    // The queues are drained: nothing due, in any class; nothing pending.
    await eventually(async () => (await prometheus.value("sum(sms_delivery_due_messages)")) === 0);
    const classes = await prometheus.series("sms_delivery_oldest_due_age_seconds");
    expect(classes.map((s) => s.labels.class).sort()).toEqual(["batch", "otp", "single"]);
    await eventually(
      async () => (await prometheus.value('sms_webhook_pending_notifications{state="due"}')) === 0,
    );
    expect(await prometheus.value("sms_webhook_oldest_pending_age_seconds")).toBe(0);
    // The runtime's own.
    expect(await prometheus.value("nodejs_eventloop_lag_p99_seconds")).toBeGreaterThanOrEqual(0);
    expect(
      await prometheus.value('nodejs_heap_space_size_used_bytes{space="old"}'),
    ).toBeGreaterThan(0);
  });

  it("loads the alert rules, which evaluate without error and fire none here", async () => {
    const rules = await prometheus.api("/api/v1/rules");
    const loaded = rules.data.groups.flatMap((g: any) => g.rules);
    expect(loaded.map((r: any) => r.name).sort()).toEqual([
      "SmsCarrierCircuitOpen",
      "SmsCarrierFailingOver",
      "SmsCarrierNotBound",
      "SmsDatabaseUnreachable",
      "SmsDeliveryQueueBehind",
      "SmsHighServerErrorRate",
      "SmsWebhookBacklog",
      "SmsWebhookFailureRate",
    ]);
    await eventually(async () => {
      const now = await prometheus.api("/api/v1/rules");
      const all = now.data.groups.flatMap((g: any) => g.rules);
      return all.every((r: any) => r.health === "ok");
    });
    const alerts = await prometheus.api("/api/v1/alerts");
    expect(alerts.data.alerts).toEqual([]);
  });

  it("promtool check metrics reports nothing about the sms_ metrics", async () => {
    const text = await (await fetch(service.metricsUrl ?? "")).text();
    const check = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    const complaints = `${check.stdout}\n${check.stderr}`
      .split("\n")
      .filter((line) => line.includes("sms_"));
    expect(complaints).toEqual([]);
    // The rules file as CI checks it, too.
    expect(execFileSync("promtool", ["check", "rules", RULES], { encoding: "utf8" })).toContain(
      "SUCCESS",
    );
  });

  it("/metrics names no phone number, credential, URL or account, and is not on PORT", async () => {
    const text = await (await fetch(service.metricsUrl ?? "")).text();
    for (const secret of [account.apiKey, account.apiSecret, "4915112345678", receiver.baseUrl]) {
      expect(text).not.toContain(secret);
    }
    expect((await getJson(`${service.baseUrl}/metrics`)).status).toBe(404);
  });
});
