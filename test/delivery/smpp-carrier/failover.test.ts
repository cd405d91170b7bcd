/**
 * Failover between carriers (issue 27, item 4): two SMPP carriers on the route [alpha, beta], each
 * bound to its own test SMSC. Alpha's SMSC killed mid-batch: every message ends final and what
 * alpha accepted is never submitted to beta. An SMSC refusing submit_sm opens alpha's circuit and
 * the next messages go to beta. /health/ready stays ready while the route has beta.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { startFailoverService } from "../../support/failover-service.ts";
import { getJson, postJson, type RunningService } from "../../support/service.ts";
import { waitFor } from "../../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../../support/smsc.ts";

let alpha: TestSmsc;
let beta: TestSmsc;
let service: RunningService;
let account: { apiKey: string; apiSecret: string };

const FINAL = ["DELIVERED", "DELIVERY_ERROR", "SEND_ERROR"] as const;

async function start(smscs: [TestSmsc, TestSmsc]): Promise<void> {
  ({ service, account } = await startFailoverService({ alpha: smscs[0], beta: smscs[1] }, [
    "{ name: default, carriers: [alpha, beta] }",
  ]));
}

beforeAll(async () => {
  [alpha, beta] = await Promise.all([
    startSmsc({ config: { receiptDelayMs: 20 } }),
    startSmsc({ config: { receiptDelayMs: 20 } }),
  ]);
  await start([alpha, beta]);
}, 120_000);

afterAll(async () => {
  await service?.close();
  await Promise.all([alpha?.stop(), beta?.stop()]);
});

async function send(numbers: readonly string[], ttl?: number): Promise<number[]> {
  const ids: number[] = [];
  for (const to of numbers) {
    const sent = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to,
      text: `to ${to}`,
      ...(ttl && { ttl }),
    });
    expect(sent.status).toBe(200);
    ids.push(Number(sent.body.id));
  }
  return ids;
}

const finalCount = (ids: number[]) =>
  service.store.messages.countDocuments({ _id: { $in: ids }, status: { $in: FINAL } });

it("moves waiting work to beta when alpha's SMSC dies, never resubmitting what alpha accepted", async () => {
  await alpha.configure({ answerDelayMs: 300 });
  const numbers = Array.from({ length: 60 }, (_, i) => `+4915112340${String(i).padStart(3, "0")}`);
  const ids = await send(numbers, 20);
  await waitFor(async () => (await alpha.pdus({ command: "submit_sm" })).length >= 8, 30_000);
  // Alpha stops answering, so its log then holds every answer it gave before it dies.
  await alpha.configure({ answerDelayMs: 600_000 });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const log = await alpha.pdus({ command: ["submit_sm", "submit_sm_resp"] });
  await alpha.kill();
  const destination = new Map(
    log.filter((p) => p.command === "submit_sm").map((p) => [p.sequence, p.destination_addr]),
  );
  const acceptedByAlpha = log
    .filter((p) => p.command === "submit_sm_resp" && p.status === 0)
    .map((p) => destination.get(p.sequence));
  expect(acceptedByAlpha.length).toBeGreaterThan(0);
  expect(acceptedByAlpha.length).toBeLessThan(numbers.length);

  await waitFor(async () => (await finalCount(ids)) === ids.length, 60_000, "every message final");
  const toBeta = new Set(
    (await beta.pdus({ command: "submit_sm" })).map((p) => p.destination_addr),
  );
  expect(acceptedByAlpha.filter((to) => to !== undefined && toBeta.has(to))).toEqual([]);
  // What alpha did not accept went to beta and was delivered.
  const delivered = await service.store.messages
    .find({ _id: { $in: ids }, carrier: "beta", status: "DELIVERED" })
    .toArray();
  expect(delivered.length).toBe(numbers.length - acceptedByAlpha.length);

  const ready = await getJson(`${service.baseUrl}/health/ready`);
  expect(ready.status).toBe(200);
  const health = await getJson(service.operatorHealthUrl ?? "");
  expect(health.body.carrier.carriers[0]).toMatchObject({ name: "alpha", takesWork: false });
}, 120_000);

it("opens alpha's circuit when its SMSC refuses submissions, and the next messages go to beta", async () => {
  // A new service on a live alpha; numbers ending in 1 are refused (ESME_RSUBMITFAIL).
  await service.close();
  await alpha.restart();
  await alpha.configure({ receiptDelayMs: 20 });
  await start([alpha, beta]);
  const refused = await send(Array.from({ length: 8 }, (_, i) => `+99900000${i}1`));
  await waitFor(async () => (await finalCount(refused)) === refused.length, 30_000);
  const health = await getJson(service.operatorHealthUrl ?? "");
  expect(health.body.carrier.carriers[0]).toMatchObject({ name: "alpha", circuit: "open" });

  await beta.reset();
  const numbers = Array.from({ length: 6 }, (_, i) => `+4917012345${60 + i}`);
  const ids = await send(numbers);
  await waitFor(async () => (await finalCount(ids)) === ids.length, 30_000);
  const toBeta = (await beta.pdus({ command: "submit_sm" })).map((p) => `+${p.destination_addr}`);
  expect(toBeta.sort()).toEqual([...numbers].sort());
  const toAlpha = (await alpha.pdus({ command: "submit_sm" })).map((p) => p.destination_addr);
  expect(toAlpha.some((to) => to?.startsWith("49"))).toBe(false);
}, 120_000);
