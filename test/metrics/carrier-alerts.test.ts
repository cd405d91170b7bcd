/**
 * The failover alert of deploy/prometheus/alerts.yml as Prometheus evaluates it (`promtool test
 * rules`, issue 27 item 7): SmsCarrierFailingOver fires per (from, to) once messages have kept
 * moving for a minute, summed over instances, with how many moved; never for a pair that moved
 * nothing, and it ends 5 minutes after the last move.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { prometheusTestsSkipped, requirePrometheus } from "../support/prometheus.ts";

const RULES = resolve(import.meta.dirname, "../../deploy/prometheus/alerts.yml");

const series = (instance: string, from: string, to: string, values: string) =>
  `      - series: 'sms_carrier_failovers_total{instance="${instance}",job="sms",from="${from}",to="${to}"}'\n        values: '${values}'`;

const firing = (moved: number) => [
  "          - exp_labels: { severity: warning, from: alpha, to: beta }",
  "            exp_annotations:",
  '              summary: "Messages meant for carrier alpha go to beta"',
  `              description: "${moved} messages whose route starts with alpha were taken by beta in 5 minutes: alpha has been unbound longer than failover.afterSeconds, its circuit is open (sms_carrier_takes_work 0), or it refused them with ESME_RSYSERR. Check sms_carrier_bound, sms_carrier_circuit_open and sms_carrier_submitted_parts_total{result=\\"refused\\"}."`,
];

const expect_ = (at: string, alerts: string[]) => [
  `      - eval_time: ${at}`,
  "        alertname: SmsCarrierFailingOver",
  alerts.length === 0 ? "        exp_alerts: []" : "        exp_alerts:",
  ...alerts,
];

describe.skipIf(prometheusTestsSkipped)("the failover alert", () => {
  it("fires per (from, to) while messages keep moving, summed over instances", () => {
    requirePrometheus();
    const file = join(mkdtempSync(join(tmpdir(), "sms-alerts-")), "failover.test.yml");
    writeFileSync(
      file,
      [
        `rule_files: [${JSON.stringify(RULES)}]`,
        "evaluation_interval: 1m",
        "tests:",
        "  - interval: 1m",
        "    input_series:",
        // Instance a moves 10 a minute from minute 3 to 8, b 5 a minute from minute 4 to 5.
        series("a:9464", "alpha", "beta", "0 0 0 10 20 30 40 50 60 60 60 60 60 60 60 60"),
        series("b:9464", "alpha", "beta", "0 0 0 0 5 10 10 10 10 10 10 10 10 10 10 10"),
        series("a:9464", "beta", "alpha", "0x15"),
        "    alert_rule_test:",
        // Pending: moving for less than a minute.
        ...expect_("3m", []),
        // Every count starts at 0: Prometheus 2's and 3's ranges give the same increase here.
        ...expect_("5m", firing(40)),
        // Nothing moved in the last 5 minutes.
        ...expect_("14m", []),
      ].join("\n"),
    );
    const run = spawnSync("promtool", ["test", "rules", file], { encoding: "utf8" });
    expect(`${run.stdout}${run.stderr}`).toContain("SUCCESS");
    expect(run.status).toBe(0);
  });
});
