/**
 * Crash-safe submission (issue 9, docs/design.md "Carrier: SMPP 3.4": a crash may resubmit at most the
 * parts that were in flight, never a whole claim). A worker process is killed with SIGKILL while it
 * delivers a batch; a second worker finishes the batch. The simulator's log of submitted parts
 * counts what reached the carrier twice.
 */
import { expect, it } from "vitest";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import { finishDelivery, insertCrashBatch, killWorkerMidDelivery } from "../support/crash.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
const WINDOW = 20;
/** Parts the worker claims beyond its window: claimed, but not yet submitted. */
const CLAIM_AHEAD = 2 * WINDOW;

it("a worker killed mid-delivery leaves at most its window of parts to be submitted twice", async () => {
  const ids = await insertCrashBatch(fixture.store, 20_000_000);
  const submissions = fixture.store.db.collection("simulator_submissions");
  await killWorkerMidDelivery(
    fixture.store,
    {
      DELIVERY_CARRIER: "simulator",
      DELIVERY_CLAIM_AHEAD: String(CLAIM_AHEAD),
      DELIVERY_WINDOW: String(WINDOW),
      DELIVERY_SEND_DELAY_MS: "20",
    },
    () => submissions.countDocuments({}),
    200,
  );
  const submittedByTheDead = await submissions.countDocuments({});
  expect(submittedByTheDead).toBeLessThan(800); // really killed in the middle (800 parts in all)

  const carrier = new SimulatorCarrier({
    db: fixture.store.db,
    sendDelayMs: 0,
    receiptDelayMs: 0,
    window: WINDOW,
    logSubmissions: true,
    instanceId: "sim-survivor",
  });
  const survivor = await finishDelivery(fixture.store, carrier, ids);

  const twice = await submissions
    .aggregate<{ n: number }>([
      { $group: { _id: { m: "$messageId", p: "$partIndex" }, n: { $sum: 1 } } },
      { $match: { n: { $gt: 1 } } },
    ])
    .toArray();
  const everyPart = await submissions
    .aggregate([{ $group: { _id: { m: "$messageId", p: "$partIndex" } } }])
    .toArray();
  // Every part reached the carrier; at most the window's parts twice, never more than twice.
  expect(everyPart).toHaveLength(800);
  expect(twice.length).toBeLessThanOrEqual(WINDOW);
  expect(twice.every((t) => t.n === 2)).toBe(true);
  // The survivor knew which parts it submitted again (their attempt was recorded before).
  expect(survivor.resubmittedParts).toBeGreaterThanOrEqual(twice.length);
  // It also counts what the dead worker had claimed but not submitted: the parts claimed ahead,
  // and a claim's messages beyond its share of parts not yet given back (a claim takes as many
  // messages as its share has parts, up to 2 parts each here, then gives back what overruns it).
  expect(survivor.resubmittedParts).toBeLessThanOrEqual(2 * (WINDOW + CLAIM_AHEAD));
  console.log(
    `crash safety: killed after ${submittedByTheDead} of 800 parts; ${twice.length} parts submitted twice (window ${WINDOW}); survivor resubmitted ${survivor.resubmittedParts}`,
  );
});
