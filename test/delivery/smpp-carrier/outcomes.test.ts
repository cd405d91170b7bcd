/**
 * Every outcome of the design's table over SMPP, through to the webhooks: a delivery worker and a
 * notifier on the SMPP adapter, bound to the test SMSC (which answers by the destination number as
 * the simulator does), a real database and a real webhook receiver. Also: the throttled-first and
 * queue-full-first numbers end DELIVERED after a resubmission, multi-part messages take their
 * status from all their parts, and a mobile-originated deliver_sm is acknowledged and logged.
 */

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SmppCarrier } from "../../../src/delivery/smpp-carrier/adapter.ts";
import type { ReasonName, StatusName } from "../../../src/domain/message-status.ts";
import type { NewMessage } from "../../../src/store/messages.ts";
import { commitBatch } from "../../support/batches.ts";
import { insertAccount, insertMessages, nextTestId, testMessage } from "../../support/fixtures.ts";
import {
  allFinal,
  deliveryService,
  recordingLogger,
  smppCarrier,
  waitFor,
} from "../../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../../support/smsc.ts";
import { useTestStore } from "../../support/store.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../../support/webhook-receiver.ts";

const fixture = useTestStore();
let smsc: TestSmsc;
let receiver: WebhookReceiver;
let carrier: SmppCarrier;
let service: ReturnType<typeof deliveryService>;
const log = recordingLogger();

beforeAll(async () => {
  smsc = await startSmsc({ config: { receiptDelayMs: 50 } });
  receiver = await startWebhookReceiver();
  // A receipt for every part (the test SMSC sends one each), as `each` asks.
  carrier = smppCarrier(smsc, { logger: log, multipartReceipts: "each" });
  service = deliveryService(fixture.store, carrier, "outcomes");
  await service.start();
});

afterAll(async () => {
  await service?.stop();
  await receiver?.close();
  await smsc?.stop();
});

type Path = { to: string; statuses: StatusName[]; reason?: ReasonName; ttl?: number };

const delivered: StatusName[] = ["ACCEPTED", "SENT", "DELIVERED"];
const failed: StatusName[] = ["ACCEPTED", "SENT", "DELIVERY_ERROR"];

/** The design's table; 8 and 9 are refused once (throttled, queue full), then delivered. */
function paths(n: number): Path[] {
  const suffix = String(n).padStart(3, "0");
  return [
    { to: `+155501${suffix}00`, statuses: delivered },
    { to: `+999555${suffix}1`, statuses: ["ACCEPTED", "SEND_ERROR"] },
    { to: `+999555${suffix}2`, statuses: failed, reason: "Unreachable" },
    { to: `+999555${suffix}3`, statuses: failed, reason: "Expired" },
    { to: `+999555${suffix}4`, statuses: failed, reason: "SIM card full" },
    { to: `+999555${suffix}5`, statuses: failed, reason: "Unroutable" },
    { to: `+999555${suffix}6`, statuses: failed, reason: "Undelivered" },
    { to: `+999555${suffix}7`, statuses: failed, reason: "Expired", ttl: 3 },
    { to: `+999555${suffix}8`, statuses: delivered },
    { to: `+999555${suffix}9`, statuses: delivered },
  ];
}

function statusesOf(id: number): string[] {
  return receiver
    .succeeded()
    .filter((r) => r.query.id === String(id))
    .map((r) => r.query.status ?? "");
}

function multiPart(accountId: string, to: string, parts: number, extra: Partial<NewMessage> = {}) {
  const segments = Array.from({ length: parts }, (_, i) => ({
    id: nextTestId(),
    text: `part ${i + 1} `.padEnd(i + 1 < parts ? 153 : 20, "x"),
  }));
  return testMessage(accountId, to, {
    parts,
    text: segments.map((s) => s.text).join(""),
    segments,
    ...extra,
  });
}

describe("outcomes over SMPP", () => {
  it("walks every path of the design's table to the webhooks, single sends and a batch", async () => {
    const account = await insertAccount(fixture.store, `${receiver.baseUrl}/status`);
    const singles = paths(1).map((p) =>
      testMessage(account._id, p.to, p.ttl ? { ttl: p.ttl } : {}),
    );
    const batchId = nextTestId();
    const batch = paths(2).map((p) =>
      testMessage(account._id, p.to, { batchId, ...(p.ttl ? { ttl: p.ttl } : {}) }),
    );
    const multi = [
      multiPart(account._id, "+15550177003", 3),
      multiPart(account._id, "+999555777004", 2),
    ];
    await insertMessages(fixture.store, [...singles, ...multi]);
    await insertMessages(fixture.store, batch);
    await commitBatch(fixture.store, batchId, account._id);
    service.worker.wake();
    const all = [...singles, ...batch, ...multi].map((m) => m.id);
    await waitFor(() => allFinal(fixture.store, all), 40_000, "every message final");

    for (const [list, table] of [
      [singles, paths(1)],
      [batch, paths(2)],
    ] as const) {
      for (const [i, path] of table.entries()) {
        const message = list[i]!;
        const doc = await fixture.store.messages.findOne({ _id: message.id });
        expect({ to: path.to, status: doc?.status, reason: doc?.reason }).toEqual({
          to: path.to,
          status: path.statuses.at(-1),
          reason: path.reason,
        });
        expect(statusesOf(message.id), path.to).toEqual(path.statuses);
      }
    }
    // SEND_ERROR keeps the SMSC's refusal
    const sendError = await fixture.store.messages.findOne({ _id: singles[1]!.id });
    expect(sendError?.sendError).toBe("submit_sm refused: ESME_RSUBMITFAIL (0x45)");
    // multi-part: DELIVERED when every part is, DELIVERY_ERROR with the failing part's reason
    expect(statusesOf(multi[0]!.id)).toEqual(delivered);
    const three = await fixture.store.messages.findOne({ _id: multi[0]!.id });
    expect(three?.carrierIds).toHaveLength(3);
    expect(three?.deliveredParts).toHaveLength(3);
    expect(statusesOf(multi[1]!.id)).toEqual(failed);
    expect((await fixture.store.messages.findOne({ _id: multi[1]!.id }))?.reason).toBe(
      "SIM card full",
    );

    // the refused-first numbers: refused once with their status, accepted on the next submit_sm
    const log = await smsc.pdus({ command: ["submit_sm", "submit_sm_resp"] });
    for (const [digit, status] of [
      ["8", 0x58],
      ["9", 0x14],
    ] as const) {
      const number = `999555001${digit}`;
      const sequences = log
        .filter((p) => p.command === "submit_sm" && p.destination_addr === number)
        .map((p) => `${p.bind}:${p.sequence}`);
      const answers = log
        .filter(
          (p) => p.command === "submit_sm_resp" && sequences.includes(`${p.bind}:${p.sequence}`),
        )
        .map((p) => p.status);
      expect(answers).toEqual([status, 0]);
    }
    // the console's last 15 minutes (carriers page) say what the SMSC logged
    const answered = log.filter((p) => p.command === "submit_sm_resp").map((p) => p.status);
    expect(carrier.status().last15Minutes).toEqual({
      submitted: log.filter((p) => p.command === "submit_sm").length,
      refused: answered.filter((s) => ![0, 0x58, 0x14].includes(s as number)).length,
      throttled: answered.filter((s) => s === 0x58 || s === 0x14).length,
    });
    // every receipt was answered (nothing left pending at the SMSC but the never-receipted ones)
    await waitFor(async () => (await smsc.receipts()).length === 0, 10_000, "receipts answered");
  });

  it("acknowledges and logs a mobile-originated message when the carrier has no inbound intake", async () => {
    const result = await smsc.mo("4915112345678", "SMSINFO", "STOP ads, bitte", { waitMs: 5_000 });
    expect(result.status).toBe(0);
    await waitFor(() => log.text().includes("mobile-originated"), 5_000);
    const record = log.records.find((r) => r.msg.includes("mobile-originated"));
    expect(record?.obj).toMatchObject({
      from: "+4915112345678",
      to: "SMSINFO",
      text: "STOP ads, bitte",
    });
  });
});
