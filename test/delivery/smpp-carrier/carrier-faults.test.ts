/**
 * A carrier that fails as a whole, and a message cut off mid-way (issue 27, item 4), with two test
 * SMSCs on the route [alpha, beta]:
 * - alpha answers every submit_sm with ESME_RSYSERR: the messages it refused (none of their parts
 *   accepted) go to beta and are DELIVERED, alpha's circuit opens and the next messages go to beta
 *   straight away; a route of alpha alone ends its message SEND_ERROR. Each move is counted in
 *   sms_carrier_failovers_total{from="alpha",to="beta"}.
 * - alpha accepts the first part of a 3-part message and then dies: the message stays with alpha
 *   (never split between carriers) while other messages fail over to beta, and goes out whole
 *   through alpha once it is back.
 * - alpha accepts one message of a submit call, sends its receipt and dies: that one is recorded as
 *   alpha's and DELIVERED by the receipt, only the other goes to beta.
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
const ESME_RSYSERR = 0x08;

async function start(): Promise<void> {
  ({ service, account } = await startFailoverService({ alpha, beta }, [
    "{ name: france, match: { countries: [FR] }, carriers: [alpha] }",
    "{ name: default, carriers: [alpha, beta] }",
  ]));
}

beforeAll(async () => {
  [alpha, beta] = await Promise.all([
    startSmsc({ config: { receiptDelayMs: 20 } }),
    startSmsc({ config: { receiptDelayMs: 20 } }),
  ]);
  await alpha.configure({ refuseStatus: ESME_RSYSERR });
  await start();
}, 120_000);

afterAll(async () => {
  await service?.close();
  await Promise.all([alpha?.stop(), beta?.stop()]);
});

async function send(numbers: readonly string[], text = (to: string) => `to ${to}`) {
  const ids: number[] = [];
  for (const to of numbers) {
    const sent = await postJson(`${service.baseUrl}/sms`, { ...account, to, text: text(to) });
    expect(sent.status).toBe(200);
    ids.push(Number(sent.body.id));
  }
  return ids;
}

const finalCount = (ids: number[]) =>
  service.store.messages.countDocuments({ _id: { $in: ids }, status: { $in: FINAL } });

/** submit_sm per destination (international digits) in an SMSC's log. */
async function submitted(smsc: TestSmsc): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const pdu of await smsc.pdus({ command: "submit_sm" })) {
    const to = pdu.destination_addr ?? "";
    counts.set(to, (counts.get(to) ?? 0) + 1);
  }
  return counts;
}

async function failovers(from: string, to: string): Promise<number | undefined> {
  const text = await fetch(service.metricsUrl ?? "").then((r) => r.text());
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`sms_carrier_failovers_total{from="${from}",to="${to}"}`));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
}

it("moves what an SMSC refuses with ESME_RSYSERR to the next carrier, opens its circuit, and counts each move", async () => {
  // alpha is France's only carrier: refused there, the message ends.
  const [french] = await send(["+33612345678"]);
  await waitFor(async () => (await finalCount([french as number])) === 1, 30_000, "French final");
  const frenchDoc = await service.store.messages.findOne({ _id: french as number });
  expect(frenchDoc).toMatchObject({ status: "SEND_ERROR", carrier: "alpha" });
  expect(frenchDoc?.sendError).toContain("ESME_RSYSERR");

  const first = Array.from({ length: 8 }, (_, i) => `+4915112347${String(i).padStart(3, "0")}`);
  const firstIds = await send(first);
  await waitFor(async () => (await finalCount(firstIds)) === first.length, 60_000, "first final");
  const health = await getJson(service.operatorHealthUrl ?? "");
  expect(health.body.carrier.carriers[0]).toMatchObject({
    name: "alpha",
    circuit: "open",
    takesWork: false,
  });

  // The circuit is open: these go to beta without alpha seeing them.
  const alphaBefore = await submitted(alpha);
  const second = Array.from({ length: 6 }, (_, i) => `+4917012347${String(i).padStart(3, "0")}`);
  const secondIds = await send(second);
  await waitFor(async () => (await finalCount(secondIds)) === second.length, 60_000);
  const alphaAfter = await submitted(alpha);
  expect([...alphaAfter.keys()].filter((to) => !alphaBefore.has(to))).toEqual([]);

  const ids = [...firstIds, ...secondIds];
  const docs = await service.store.messages.find({ _id: { $in: ids } }).toArray();
  expect(docs.map((d) => [d.status, d.carrier])).toEqual(ids.map(() => ["DELIVERED", "beta"]));
  // Each went to beta once; alpha accepted nothing of them.
  const toBeta = await submitted(beta);
  expect([...first, ...second].map((to) => toBeta.get(to.slice(1)))).toEqual(ids.map(() => 1));
  const answers = await alpha.pdus({ command: "submit_sm_resp" });
  expect(answers.length).toBeGreaterThan(0);
  expect(answers.every((p) => p.status === ESME_RSYSERR)).toBe(true);
  // What alpha refused keeps the trace of it.
  const refused = docs.filter((d) => d.route?.refusedBy);
  expect(refused.length).toBeGreaterThan(0);
  for (const d of refused)
    expect(d.route).toMatchObject({ carriers: ["beta"], refusedBy: ["alpha"] });

  expect(await failovers("alpha", "beta")).toBe(ids.length);
  expect(await failovers("beta", "alpha")).toBe(0);
}, 180_000);

it("keeps a multi-part message with the carrier that accepted a part of it, while other work fails over", async () => {
  // A new service (alpha's circuit closed); alpha answers one submit_sm, then hangs and dies.
  await service.close();
  await alpha.configure({ refuseStatus: 0 });
  await Promise.all([alpha.reset(), beta.reset()]);
  await start();
  await alpha.configure({ hangAfterSubmits: 1 });
  const longTo = "+4916012348001";
  const [long] = await send([longTo], () => "Long message. ".repeat(30));
  const id = long as number;
  expect((await service.store.messages.findOne({ _id: id }))?.parts).toBe(3);
  await waitFor(
    async () => (await alpha.pdus({ command: "submit_sm_resp" })).some((p) => p.status === 0),
    30_000,
    "a part accepted by alpha",
  );
  await alpha.kill();

  // Given back once alpha's binds stay down: kept for alpha (before: resubmitted whole to beta).
  await waitFor(
    async () => (await service.store.messages.findOne({ _id: id }))?.carrier !== undefined,
    60_000,
    "the message given back",
  );
  expect(await service.store.messages.findOne({ _id: id })).toMatchObject({
    status: "ACCEPTED",
    carrier: "alpha",
  });
  // Work that no carrier has started goes to beta meanwhile.
  const [single] = await send(["+4916012348002"]);
  await waitFor(async () => (await finalCount([single as number])) === 1, 60_000);
  expect(await service.store.messages.findOne({ _id: single as number })).toMatchObject({
    status: "DELIVERED",
    carrier: "beta",
  });

  // alpha back: the whole message goes out through it.
  await alpha.restart();
  await waitFor(async () => (await finalCount([id])) === 1, 90_000, "the long message final");
  expect(await service.store.messages.findOne({ _id: id })).toMatchObject({
    status: "DELIVERED",
    carrier: "alpha",
  });
  expect((await submitted(alpha)).get(longTo.slice(1))).toBe(3);
  expect((await submitted(beta)).has(longTo.slice(1))).toBe(false);
  expect(await failovers("alpha", "beta")).toBe(1);
}, 240_000);

it("records what a carrier accepted before it died as its own, and moves only the rest of the call", async () => {
  await service.close();
  await Promise.all([alpha.reset(), beta.reset()]);
  await start();
  await alpha.configure({ refuseStatus: 0, hangAfterSubmits: 1 });
  // One batch: both messages in one claim and one submit call to alpha, which answers one of them.
  const numbers = ["+4916012349001", "+4916012349002"];
  const sent = await postJson(`${service.baseUrl}/sms-batch`, {
    ...account,
    messages: numbers.map((to) => ({ to, text: `to ${to}` })),
  });
  expect(sent.status).toBe(200);
  let log: Awaited<ReturnType<TestSmsc["pdus"]>> = [];
  // Killed once alpha has sent the accepted one's receipt.
  await waitFor(
    async () => {
      log = await alpha.pdus({ command: ["submit_sm", "submit_sm_resp", "deliver_sm"] });
      return log.some((p) => p.command === "deliver_sm");
    },
    30_000,
    "one accepted by alpha, its receipt sent",
  );
  await alpha.kill();
  const answered = log.find((p) => p.command === "submit_sm_resp")?.sequence;
  const acceptedTo = `+${log.find((p) => p.command === "submit_sm" && p.sequence === answered)?.destination_addr}`;
  const otherTo = numbers.find((to) => to !== acceptedTo) as string;
  expect(numbers).toContain(acceptedTo);

  const byNumber = (to: string) => service.store.messages.findOne({ to });
  await waitFor(async () => (await byNumber(otherTo))?.status === "DELIVERED", 60_000, "the other");
  expect(await byNumber(otherTo)).toMatchObject({ carrier: "beta" });
  // Accepted by alpha: recorded as its own, and its receipt, held until then, matches it.
  await waitFor(
    async () => (await byNumber(acceptedTo))?.status === "DELIVERED",
    30_000,
    "receipt",
  );
  const accepted = await byNumber(acceptedTo);
  expect(accepted).toMatchObject({ carrier: "alpha", carrierIds: [expect.any(String)] });
  expect((await submitted(beta)).has(acceptedTo.slice(1))).toBe(false);
}, 180_000);
