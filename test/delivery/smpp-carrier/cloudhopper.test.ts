/**
 * Interoperability (docs/design.md "Carrier-grade SMPP"): the adapter's main paths against a
 * second SMSC implementation written by others, cloudhopper-smpp's server (test/smsc-cloudhopper),
 * beside jsmpp's (test/smsc): bind, submit_sm single and multi-part (SAR), delivery receipts whose
 * id is written in decimal while submit_sm_resp wrote it in hex (receiptIds: auto), an MO, and
 * enquire_link both ways. Through the delivery worker, the inbound intake and the test database.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { SmppCarrier } from "../../../src/delivery/smpp-carrier/adapter.ts";
import { InboundIntake } from "../../../src/inbound/intake.ts";
import type { InboundForOptOut } from "../../../src/opt-outs/rules.ts";
import type { MessageDoc } from "../../../src/store/documents.ts";
import { assignNumber } from "../../../src/store/numbers.ts";
import { IdAllocator } from "../../../src/store/sequences.ts";
import { insertAccount, insertMessages, nextTestId, testMessage } from "../../support/fixtures.ts";
import { deliveryService, recordingLogger, smppCarrier, waitFor } from "../../support/smpp.ts";
import {
  type CloudhopperEvent,
  type CloudhopperSmsc,
  startCloudhopperSmsc,
} from "../../support/smsc-cloudhopper.ts";
import { useTestStore } from "../../support/store.ts";

const fixture = useTestStore();
const NUMBER = "+4930777000";
let smsc: CloudhopperSmsc;
let carrier: SmppCarrier;
let service: ReturnType<typeof deliveryService>;
const handed: InboundForOptOut[] = [];

beforeAll(async () => {
  smsc = await startCloudhopperSmsc({ receiptDelayMs: 50 });
  const logger = recordingLogger();
  const intake = new InboundIntake({
    db: fixture.store.db,
    now: () => new Date(),
    ids: new IdAllocator(fixture.store.counters, "inbound", 20),
    logger,
    onInbound: async (message) => {
      handed.push(message);
    },
    reassemblyMs: 1_800_000,
    defaultAlphabet: "gsm7",
  });
  carrier = smppCarrier(smsc, {
    logger,
    enquireLinkMs: 200,
    inbound: (parts) => intake.take(parts),
  });
  service = deliveryService(fixture.store, carrier, `cloudhopper-${nextTestId()}`);
  await service.start();
  intake.start();
  await waitFor(async () => (await smsc.binds()) === 1, 20_000, "bound to cloudhopper");
}, 120_000);

afterAll(async () => {
  await service?.stop();
  await smsc?.stop();
});

const submits = async () =>
  (await smsc.log()).filter(
    (e): e is Extract<CloudhopperEvent, { command: "submit_sm" }> => e.command === "submit_sm",
  );

async function statuses(ids: number[]): Promise<MessageDoc["status"][]> {
  const docs = await fixture.store.messages.find({ _id: { $in: ids } }).toArray();
  return ids.map((id) => docs.find((d) => d._id === id)?.status as MessageDoc["status"]);
}

it("binds as a transceiver", async () => {
  expect((await smsc.log()).filter((e) => e.command === "bind")).toHaveLength(1);
  expect(carrier.status().state).toBe("bound");
});

it("submits single and multi-part messages; receipts in decimal for hex ids make them DELIVERED", async () => {
  const account = await insertAccount(fixture.store);
  const single = testMessage(account._id, "+4915177700001");
  const long = testMessage(account._id, "+4915177700002", {
    parts: 3,
    segments: [0, 1, 2].map((i) => ({ id: nextTestId(), text: `part ${i + 1} of a long one` })),
  });
  const ids = await insertMessages(fixture.store, [single, long]);
  service.worker.wake();
  await waitFor(
    async () => (await statuses(ids)).every((s) => s === "DELIVERED"),
    30_000,
    "both DELIVERED",
  );
  const sent = await submits();
  const toSingle = sent.filter((s) => s.destination === "4915177700001");
  const toLong = sent.filter((s) => s.destination === "4915177700002");
  expect(toSingle).toHaveLength(1);
  expect(toSingle[0]?.sar).toBeNull();
  // Three parts joined by SAR TLVs: one reference, total 3, sequence 1 to 3.
  expect(toLong.map((s) => s.sar?.slice(1))).toEqual([
    [3, 1],
    [3, 2],
    [3, 3],
  ]);
  expect(new Set(toLong.map((s) => s.sar?.[0])).size).toBe(1);
  // The ids as the SMSC wrote them: hex in submit_sm_resp (kept on the parts), decimal in receipts.
  const answered = [...toSingle, ...toLong].map((s) => s.message_id);
  expect(answered.every((id) => /[a-f]/.test(id))).toBe(true);
  const docs = await fixture.store.messages.find({ _id: { $in: ids } }).toArray();
  expect(docs.flatMap((d) => d.carrierIds ?? []).sort()).toEqual([...answered].sort());
  const receiptAnswers = async () =>
    (await smsc.log()).filter(
      (e): e is Extract<CloudhopperEvent, { command: "deliver_sm_resp" }> =>
        e.command === "deliver_sm_resp" && "kind" in e && e.kind === "receipt",
    );
  // One receipt settles the long message (multipartReceipts: any); the others are answered too.
  await waitFor(async () => (await receiptAnswers()).length === 4, 20_000, "4 receipts answered");
  const receipts = await receiptAnswers();
  expect(receipts.map((r) => r.id).sort()).toEqual(
    answered.map((id) => BigInt(`0x${id}`).toString()).sort(),
  );
  expect(receipts.every((r) => r.status === 0)).toBe(true);
});

it("takes an MO and answers its deliver_sm ESME_ROK once stored", async () => {
  await assignNumber(fixture.store.db, "acct-cloudhopper", NUMBER);
  expect(await smsc.mo("4915177700009", NUMBER.slice(1), "Hallo aus Köln")).toBe(0);
  const mo = handed.find((m) => m.to === NUMBER);
  expect(mo).toMatchObject({
    accountId: "acct-cloudhopper",
    from: "+4915177700009",
    text: "Hallo aus Köln",
  });
});

it("answers the SMSC's enquire_link and sends its own", async () => {
  expect(await smsc.enquireLink()).toBe(0);
  await waitFor(
    async () => (await smsc.log()).some((e) => e.command === "enquire_link"),
    20_000,
    "our enquire_link",
  );
  expect(carrier.status().state).toBe("bound");
});
