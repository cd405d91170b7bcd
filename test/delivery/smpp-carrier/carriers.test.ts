/**
 * Several carriers side by side (issue 27, item 2): the service started from a carriers file with
 * two SMPP carriers, each bound to its own test SMSC. Messages reach the SMSC their route names
 * (by country, and both of a split), each exactly once, and every receipt, from either SMSC, is
 * matched to its own message: every message ends DELIVERED. Both SMSCs number their message ids
 * alike, so receipts matched by id alone would mix the carriers up.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { carriersFile } from "../../support/carriers-file.ts";
import { getJson, postJson, type RunningService, startService } from "../../support/service.ts";
import { waitFor } from "../../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../../support/smsc.ts";

let alpha: TestSmsc;
let beta: TestSmsc;
let service: RunningService;

beforeAll(async () => {
  [alpha, beta] = await Promise.all([
    startSmsc({ config: { receiptDelayMs: 50 } }),
    startSmsc({ config: { receiptDelayMs: 50 } }),
  ]);
  const file = carriersFile([
    "carriers:",
    `  - { name: alpha, url: "${alpha.url}", binds: 1, window: 5, tps: 100 }`,
    `  - { name: beta, url: "${beta.url}", binds: 2, window: 3, tps: 100 }`,
    "routes:",
    "  - { name: germany, match: { countries: [DE] }, carriers: [alpha, beta] }",
    "  - { name: france, match: { countries: [FR] }, split: { alpha: 50, beta: 50 } }",
    "  - { name: default, carriers: [beta, alpha] }",
    "prices:",
    "  default: 0.05",
  ]);
  service = await startService({ SMS_RUN_WORKERS: "true", SMS_CARRIERS_FILE: file }, undefined, {
    metrics: true,
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
  await Promise.all([alpha?.stop(), beta?.stop()]);
});

const submitted = async (smsc: TestSmsc) =>
  (await smsc.pdus({ command: "submit_sm" })).map((p) => `+${p.destination_addr}`);

it("sends each message to the SMSC of its route, once, and matches the receipts of both", async () => {
  const account = await service.createAccount({ credit: 100 });
  const germany = Array.from({ length: 8 }, (_, i) => `+4915112345${600 + i}`);
  const britain = Array.from({ length: 8 }, (_, i) => `+4479112345${60 + i}`);
  const france = Array.from({ length: 40 }, (_, i) => `+336123456${10 + i}`);
  const ids: number[] = [];
  for (const to of [...germany, ...britain, ...france]) {
    const sent = await postJson(`${service.baseUrl}/sms`, { ...account, to, text: `to ${to}` });
    expect(sent.status).toBe(200);
    ids.push(Number(sent.body.id));
  }
  const messages = service.store.messages;
  await waitFor(
    async () =>
      (await messages.countDocuments({ _id: { $in: ids }, status: "DELIVERED" })) === ids.length,
    60_000,
    "every message DELIVERED",
  );
  const [toAlpha, toBeta] = await Promise.all([submitted(alpha), submitted(beta)]);
  // Germany by alpha, the default route (Guernsey's +44 7911 too) by beta, France split.
  expect(toAlpha.filter((to) => to.startsWith("+49")).sort()).toEqual([...germany].sort());
  expect(toBeta.filter((to) => to.startsWith("+44")).sort()).toEqual([...britain].sort());
  expect(toBeta.some((to) => to.startsWith("+49"))).toBe(false);
  expect(toAlpha.some((to) => to.startsWith("+44"))).toBe(false);
  const frenchOnAlpha = toAlpha.filter((to) => to.startsWith("+33"));
  const frenchOnBeta = toBeta.filter((to) => to.startsWith("+33"));
  expect(frenchOnAlpha.length).toBeGreaterThan(5);
  expect(frenchOnBeta.length).toBeGreaterThan(5);
  // Each message submitted once, by one carrier.
  expect([...frenchOnAlpha, ...frenchOnBeta].sort()).toEqual([...france].sort());
  // The carrier that took each message is kept with it, as its route's first carrier.
  const docs = await messages
    .find({ _id: { $in: ids } }, { projection: { to: 1, carrier: 1, route: 1 } })
    .toArray();
  for (const doc of docs) expect(doc.carrier).toBe(doc.route?.carriers[0]);
});

it("shows every carrier in the operator's /health", async () => {
  const health = () => getJson(service.operatorHealthUrl ?? "");
  await waitFor(async () =>
    ((await health()).body.carrier?.carriers ?? []).every(
      (c: { state: string }) => c.state === "bound",
    ),
  );
  const { body } = await health();
  expect(body.carrier.carriers.map((c: { name: string }) => c.name)).toEqual(["alpha", "beta"]);
  expect(body.carrier.carriers[1].binds).toHaveLength(2);
});

it("labels the carrier metrics with each carrier's name", async () => {
  const metrics = await fetch(service.metricsUrl ?? "").then((r) => r.text());
  const value = (line: string) =>
    Number(
      metrics
        .split("\n")
        .find((l) => l.startsWith(`${line} `))
        ?.split(" ")[1],
    );
  for (const carrier of ["alpha", "beta"]) {
    expect(
      value(`sms_carrier_submitted_parts_total{carrier="${carrier}",result="accepted"}`),
    ).toBeGreaterThan(5);
    expect(value(`sms_carrier_bound{carrier="${carrier}"}`)).toBe(1);
    expect(value(`sms_carrier_circuit_open{carrier="${carrier}"}`)).toBe(0);
    expect(value(`sms_carrier_takes_work{carrier="${carrier}"}`)).toBe(1);
  }
  expect(metrics).not.toContain('carrier="smpp"');
});
