/**
 * Receipts that overtake (docs/design.md "Carrier-grade SMPP"): a receipt for an id not (yet)
 * known is answered once stored among unmatched receipts, matched there against submit_sm_resps
 * still to come for 10 minutes, then dropped and counted. Through the SMPP adapter, the delivery
 * worker and the test database, from an SMSC on a raw socket that can hold its submit_sm_resps
 * and sends the receipts a test writes. Order and causality only: the receipt's deliver_sm_resp
 * comes while the SMSC still holds the submit_sm_resp it overtook.
 */
import { pino } from "pino";
import { afterEach, expect, it } from "vitest";
import { UNMATCHED_HOLD_MS } from "../../../src/delivery/receipts.ts";
import { DeliveryWorker } from "../../../src/delivery/worker.ts";
import type { MessageDoc } from "../../../src/store/documents.ts";
import { unmatchedReceipts } from "../../../src/store/unmatched-receipts.ts";
import { insertAccount, insertMessages, nextTestId, testMessage } from "../../support/fixtures.ts";
import {
  DELIVER_SM,
  pdu,
  type RawSmsc,
  receiptBody,
  startRawSmsc,
} from "../../support/raw-smsc.ts";
import { smppCarrier, waitFor } from "../../support/smpp.ts";
import { useTestStore } from "../../support/store.ts";

const fixture = useTestStore();
let smsc: RawSmsc | undefined;
let worker: DeliveryWorker | undefined;

afterEach(async () => {
  await worker?.stop();
  await smsc?.close();
  worker = undefined;
});

async function start(unmatched: { holdMs?: number; sweepMs?: number }) {
  smsc = await startRawSmsc();
  worker = new DeliveryWorker({
    store: fixture.store,
    carrier: smppCarrier(smsc, {}),
    logger: pino({ level: "silent" }),
    instanceId: `unmatched-${nextTestId()}`,
    pollIntervalMs: 50,
    unmatchedReceipts: { sweepMs: 50, ...unmatched },
  });
  await worker.start();
  await smsc.boundAfter(0);
  return smsc;
}

async function receipt(raw: RawSmsc, ...args: Parameters<typeof receiptBody>): Promise<number> {
  const sequence = raw.nextSequence();
  raw.write(pdu(DELIVER_SM, sequence, receiptBody(...args)));
  return (await raw.answerTo(sequence)).status;
}

const statusOf = async (id: number) =>
  (await fixture.store.messages.findOne({ _id: id }))?.status as MessageDoc["status"];
const kept = () => unmatchedReceipts(fixture.store.db).find().toArray();

it("answers a receipt that overtook its submit_sm_resp at once, keeps it, and matches it when the answer comes", async () => {
  const raw = await start({});
  raw.messageIdFor = () => "00ff3a";
  raw.holdAnswers = true;
  const account = await insertAccount(fixture.store);
  const [id] = await insertMessages(fixture.store, [testMessage(account._id, "+4915500100")]);
  worker?.wake();
  await waitFor(async () => raw.submits.length === 1, 20_000, "the submit_sm");
  // The receipt comes first, in another id form, and is answered while the answer is held.
  expect(await receipt(raw, "65338", "DELIVRD")).toBe(0);
  expect(raw.seen.filter((p) => p.commandId === 0x80000004)).toHaveLength(0);
  const [doc] = await kept();
  expect(doc?.receipt.carrierId).toBe("65338");
  // Kept for the design's 10 minutes.
  expect(UNMATCHED_HOLD_MS).toBe(600_000);
  expect((doc?.dropAt.getTime() ?? 0) - (doc?.keptAt.getTime() ?? 0)).toBe(UNMATCHED_HOLD_MS);
  expect(await statusOf(id as number)).toBe("ACCEPTED");

  raw.release();
  await waitFor(async () => (await statusOf(id as number)) === "DELIVERED", 20_000, "DELIVERED");
  await waitFor(async () => (await kept()).length === 0, 20_000, "the kept receipt removed");
  expect(worker?.stats()).toMatchObject({ receiptsKept: 1, receiptsUnmatchedDropped: 0 });
});

it("drops and counts a kept receipt that matched nothing within the hold", async () => {
  const raw = await start({ holdMs: 300 });
  expect(await receipt(raw, "nobody-knows-me", "DELIVRD")).toBe(0);
  expect((await kept()).map((d) => d.receipt.carrierId)).toEqual(["nobody-knows-me"]);
  await waitFor(async () => (await kept()).length === 0, 20_000, "dropped after the hold");
  expect(worker?.stats()).toMatchObject({ receiptsKept: 1, receiptsUnmatchedDropped: 1 });
});
