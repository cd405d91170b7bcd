/**
 * Crash-safe submission over SMPP (docs/design.md "Carrier: SMPP 3.4": a crash may resubmit at most the
 * parts that were in flight, never a whole claim). A worker process on the SMPP adapter is killed
 * with SIGKILL while it delivers a batch through the test SMSC; a second one finishes the batch.
 * The SMSC's PDU log counts the parts that reached it twice: at most the window
 * (SMS_SMPP_WINDOW x SMS_SMPP_BINDS).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { finishDelivery, insertCrashBatch, killWorkerMidDelivery } from "../../support/crash.ts";
import { smppCarrier } from "../../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../../support/smsc.ts";
import { type Pdu, tlv } from "../../support/smsc-pdus.ts";
import { useTestStore } from "../../support/store.ts";

const fixture = useTestStore();
const BINDS = 2;
const WINDOW = 10;
/** Parts the worker claims beyond its window: claimed, but not yet submitted. */
const CLAIM_AHEAD = 2 * BINDS * WINDOW;
let smsc: TestSmsc;

beforeAll(async () => {
  // Answers after a few ms, so that the window is full when the worker dies.
  smsc = await startSmsc({ config: { answerDelayMs: 5, receiptDelayMs: 50 } });
});

afterAll(async () => {
  await smsc?.stop();
});

/** The part a submit_sm carries: destination and segment number. */
function partKey(pdu: Pdu): string {
  return `${pdu.destination_addr}#${tlv(pdu, 0x020f)?.readUInt8(0) ?? 1}`;
}

it("a worker killed mid-delivery leaves at most its window of parts to be submitted twice", {
  timeout: 120_000,
}, async () => {
  const ids = await insertCrashBatch(fixture.store, 30_000_000);
  const submitted = async () => (await smsc.pdus({ command: "submit_sm" })).length;
  await killWorkerMidDelivery(
    fixture.store,
    {
      DELIVERY_CARRIER: "smpp",
      DELIVERY_CLAIM_AHEAD: String(CLAIM_AHEAD),
      SMPP_URL: smsc.url,
      SMPP_BINDS: String(BINDS),
      SMPP_WINDOW: String(WINDOW),
    },
    submitted,
    200,
  );
  const submittedByTheDead = await submitted();
  expect(submittedByTheDead).toBeLessThan(800); // really killed in the middle (800 parts in all)

  const carrier = smppCarrier(smsc, { binds: BINDS, window: WINDOW, holdUnknownReceiptsMs: 1_000 });
  const survivor = await finishDelivery(fixture.store, carrier, ids);

  const counts = new Map<string, number>();
  for (const pdu of await smsc.pdus({ command: "submit_sm" }))
    counts.set(partKey(pdu), (counts.get(partKey(pdu)) ?? 0) + 1);
  const twice = [...counts.values()].filter((n) => n > 1);
  // Every part reached the SMSC; at most the window's parts twice, never more than twice.
  expect(counts.size).toBe(800);
  expect(twice.length).toBeLessThanOrEqual(BINDS * WINDOW);
  expect(twice.every((n) => n === 2)).toBe(true);
  expect(survivor.resubmittedParts).toBeGreaterThanOrEqual(twice.length);
  // It also counts what the dead worker had claimed but not submitted: the parts claimed ahead,
  // and a claim's messages beyond its share of parts not yet given back (a claim takes as many
  // messages as its share has parts, up to 2 parts each here, then gives back what overruns it).
  expect(survivor.resubmittedParts).toBeLessThanOrEqual(2 * (BINDS * WINDOW + CLAIM_AHEAD));
  console.log(
    `SMPP crash safety: killed after ${submittedByTheDead} of 800 parts; ${twice.length} parts submitted twice (window ${BINDS} x ${WINDOW}); survivor resubmitted ${survivor.resubmittedParts}`,
  );
});
