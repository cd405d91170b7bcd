/**
 * Carriers sold at a few parts per second (a US long code takes about 1): every TPS from 1 up
 * delivers, at no more than that rate. Through the test SMSC (SMS_SMPP_TPS, one bind, the rate read
 * from its PDU log) and through the simulator (SMS_SIM_TPS, from its own log of admitted parts).
 * Each run holds single-part messages and one message longer than the worker's bucket can save up.
 *
 * The rate checks are upper bounds only (a slow machine cannot break them); "delivers" is a
 * generous deadline, not a speed.
 */
import { pino } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Carrier } from "../../src/delivery/carrier.ts";
import { SimulatorCarrier } from "../../src/delivery/simulator.ts";
import type { SmppCarrier } from "../../src/delivery/smpp-carrier/adapter.ts";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import type { SegmentDoc } from "../../src/store/documents.ts";
import { insertAccount, insertMessages, nextTestId, testMessage } from "../support/fixtures.ts";
import { worstExcess } from "../support/rates.ts";
import { smppCarrier, waitFor } from "../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../support/smsc.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
const logger = pino({ level: process.env.LOW_RATE_LOG ?? "silent" });
let smsc: TestSmsc;
const carriers: SmppCarrier[] = [];

beforeAll(async () => {
  smsc = await startSmsc({ config: { receiptDelayMs: 20, answerDelayMs: 0 } });
});
afterAll(async () => {
  await Promise.all(carriers.map((c) => c.stop()));
  await smsc?.stop();
});
beforeEach(async () => {
  await smsc.reset();
});

const RATES = [1, 2, 5, 19];

/** Parts of a run at `tps`: single-part messages for about two seconds, and one long message. */
function runParts(tps: number) {
  const singles = Math.max(3, 2 * tps);
  const longParts = Math.min(10, 2 + tps);
  // Generous: three times the time the rate needs, plus 20 s for a loaded machine.
  const deadlineMs = (3 * (singles + longParts) * 1000) / tps + 20_000;
  return { singles, longParts, deadlineMs };
}

function segments(count: number): SegmentDoc[] {
  return Array.from({ length: count }, (_, i) => ({ id: nextTestId(), text: `part ${i + 1}` }));
}

/**
 * Runs a worker on `carrier` over single-part messages (about two seconds of the rate) and one
 * long message (up to 10 parts, more than the worker's bucket holds at these rates) until every
 * message is SENT (or already DELIVERED); returns the parts submitted.
 */
async function deliverAll(carrier: Carrier, tps: number, tag: string): Promise<number> {
  const account = await insertAccount(fixture.store);
  const { singles, longParts, deadlineMs } = runParts(tps);
  const messages = [
    ...Array.from({ length: singles }, (_, i) =>
      testMessage(account._id, `+4915130${String(100_000 + i)}`),
    ),
    testMessage(account._id, "+4915139999999", {
      parts: longParts,
      segments: segments(longParts),
    }),
  ];
  const ids = await insertMessages(fixture.store, messages);
  const worker = new DeliveryWorker({
    store: fixture.store,
    carrier,
    logger,
    instanceId: `low-rate-${tag}`,
    pollIntervalMs: 50,
  });
  await worker.start();
  const parts = singles + longParts;
  try {
    await waitFor(
      async () =>
        (await fixture.store.messages.countDocuments({
          _id: { $in: ids },
          status: { $in: ["SENT", "DELIVERED"] },
        })) === ids.length,
      deadlineMs,
      `every message SENT at ${tps} parts/s`,
    );
  } finally {
    await worker.stop();
  }
  return parts;
}

describe("an SMPP carrier sold at a few parts per second", () => {
  for (const tps of RATES) {
    it(
      `delivers at SMS_SMPP_TPS=${tps}, and never faster`,
      async () => {
        const carrier = smppCarrier(smsc, { binds: 1, window: 10, tps });
        carriers.push(carrier);
        const parts = await deliverAll(carrier, tps, `smpp-${tps}`);
        const times = (await smsc.pdus({ command: "submit_sm" }))
          .filter((pdu) => pdu.dir === "in")
          .map((pdu) => pdu.at);
        expect(times).toHaveLength(parts);
        // The bind's bucket saves up max(2, TPS/20); one part more for sends that a stalled process
        // or socket delivers together. Without a throttle every part goes at once.
        expect(worstExcess(times, tps, 2)).toBeLessThanOrEqual(1);
      },
      runParts(tps).deadlineMs + 15_000,
    );
  }
});

describe("the simulator sold at a few parts per second", () => {
  for (const tps of RATES) {
    it(
      `delivers at SMS_SIM_TPS=${tps}, and never faster`,
      async () => {
        const carrier = new SimulatorCarrier({
          db: fixture.store.db,
          sendDelayMs: 0,
          receiptDelayMs: 0,
          pollIntervalMs: 50,
          tps,
          logSubmissions: true,
          collectionName: `receipts_low_rate_${tps}`,
        });
        await carrier.submissions.deleteMany({});
        const parts = await deliverAll(carrier, tps, `sim-${tps}`);
        const times = (await carrier.submissions.find().sort({ at: 1 }).toArray()).map((s) =>
          s.at.getTime(),
        );
        expect(times).toHaveLength(parts);
        // The simulator's bucket saves up a fifth of a second (at least one part): a long message is
        // taken part by part at the rate, as a throttled SMSC link takes it.
        expect(worstExcess(times, tps, Math.max(1, tps / 5))).toBeLessThanOrEqual(1);
      },
      runParts(tps).deadlineMs + 15_000,
    );
  }
});
