/**
 * Receipts as carriers really write them (docs/design.md "Carrier-grade SMPP"), through the SMPP
 * adapter, the delivery worker and the test database, from an SMSC on a raw socket that answers
 * submit_sm with the ids a test gives and sends the receipts a test writes:
 *
 * - `receiptIds: auto`: the receipt's id in another form than the submit_sm_resp's (hex and
 *   decimal either way round, leading zeros, case) finds its part; an id that matches two parts
 *   is not guessed; `exact` compares as written.
 * - `multipartReceipts: any`: one receipt of the first or the last part settles a message.
 * - What the carrier said (stat, err, network_error_code, done date) is kept with the part.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SmppCarrierOptions } from "../../../src/delivery/smpp-carrier/carrier-options.ts";
import type { StatusName } from "../../../src/domain/message-status.ts";
import type { MessageDoc } from "../../../src/store/documents.ts";
import { insertAccount, insertMessages, nextTestId, testMessage } from "../../support/fixtures.ts";
import {
  DELIVER_SM,
  pdu,
  type RawSmsc,
  receiptBody,
  startRawSmsc,
} from "../../support/raw-smsc.ts";
import { deliveryService, smppCarrier, waitFor } from "../../support/smpp.ts";
import { useTestStore } from "../../support/store.ts";

const fixture = useTestStore();
let smsc: RawSmsc;
let service: ReturnType<typeof deliveryService> | undefined;

afterEach(async () => {
  await service?.stop();
  await smsc?.close();
});

/** A worker on an SMSC that answers each destination's submit_sm with `ids[destination][nth]`. */
async function start(ids: Record<string, string[]>, options: Partial<SmppCarrierOptions> = {}) {
  smsc = await startRawSmsc();
  smsc.messageIdFor = (destination, nth) => ids[destination]?.[nth] ?? `x${destination}-${nth}`;
  const carrier = smppCarrier(smsc, options);
  service = deliveryService(fixture.store, carrier, `forms-${nextTestId()}`);
  await service.start();
  await smsc.boundAfter(0);
}

/** Messages to `tos` (with `parts` parts each), all SENT once the SMSC accepted every part. */
async function sent(tos: string[], parts = 1): Promise<number[]> {
  const account = await insertAccount(fixture.store);
  const messages = tos.map((to) =>
    parts === 1
      ? testMessage(account._id, to)
      : testMessage(account._id, to, {
          parts,
          segments: Array.from({ length: parts }, (_, i) => ({ id: nextTestId(), text: `p${i}` })),
        }),
  );
  const ids = await insertMessages(fixture.store, messages);
  service?.worker.wake();
  await waitFor(async () => (await statuses(ids)).every((s) => s === "SENT"), 20_000, "SENT");
  return ids;
}

async function docs(ids: number[]): Promise<MessageDoc[]> {
  const found = await fixture.store.messages.find({ _id: { $in: ids } }).toArray();
  return ids.map((id) => found.find((m) => m._id === id) as MessageDoc);
}

async function statuses(ids: number[]): Promise<StatusName[]> {
  return (await docs(ids)).map((m) => m.status);
}

/** The SMSC sends a receipt and waits for its deliver_sm_resp. */
async function receipt(...args: Parameters<typeof receiptBody>): Promise<number> {
  const sequence = smsc.nextSequence();
  smsc.write(pdu(DELIVER_SM, sequence, receiptBody(...args)));
  return (await smsc.answerTo(sequence)).status;
}

describe("receipt ids in another form", () => {
  // submit_sm_resp id → the receipt's id for the same part.
  const forms: [string, string, string][] = [
    ["hex answer, decimal receipt", "00ff3a", "65338"],
    ["decimal answer, hex receipt", "65338", "FF3A"],
    ["leading zeros in the answer", "0000012345", "12345"],
    ["leading zeros in the receipt", "777", "000000777"],
    ["upper case answer, lower case receipt", "ABCDEF0123", "abcdef0123"],
  ];

  it("find their part with `auto` (the default): every message DELIVERED, none Expired", async () => {
    const tos = forms.map((_, i) => `4915500000${i}`);
    await start(Object.fromEntries(forms.map(([, answer], i) => [tos[i], [answer]])));
    const ids = await sent(tos.map((to) => `+${to}`));
    for (const [, , written] of forms) expect(await receipt(written, "DELIVRD")).toBe(0);
    await waitFor(
      async () => (await statuses(ids)).every((s) => s === "DELIVERED"),
      20_000,
      "DELIVERED",
    );
  });

  it("are compared as written with `exact`", async () => {
    await start({ "4915500009": ["00ff3a"] }, { receiptIds: "exact", holdUnknownReceiptsMs: 300 });
    const ids = await sent(["+4915500009"]);
    expect(await receipt("65338", "DELIVRD")).toBe(0); // answered once dropped as unknown
    expect(await statuses(ids)).toEqual(["SENT"]);
  });

  it("are not guessed when they match two parts awaiting a receipt", async () => {
    // "31" is decimal 31 ("1f") and hex 0x31 ("49"): both parts could be meant.
    await start({ "4915500010": ["1f"], "4915500011": ["49"] }, { holdUnknownReceiptsMs: 300 });
    const ids = await sent(["+4915500010", "+4915500011"]);
    expect(await receipt("31", "DELIVRD")).toBe(0);
    expect(await statuses(ids)).toEqual(["SENT", "SENT"]);
    // Their own ids still match exactly.
    expect(await receipt("1f", "DELIVRD")).toBe(0);
    expect(await receipt("49", "UNDELIV", "027")).toBe(0);
    await waitFor(
      async () => (await statuses(ids)).join() === "DELIVERED,DELIVERY_ERROR",
      20_000,
      "final",
    );
  });
});

describe("one receipt for a multi-part message", () => {
  it("settles every part with `any` (the default), from the first or the last part", async () => {
    await start({
      "4915500020": ["a1", "a2", "a3"],
      "4915500021": ["b1", "b2", "b3"],
    });
    const ids = await sent(["+4915500020", "+4915500021"], 3);
    expect(await receipt("a1", "DELIVRD")).toBe(0);
    expect(
      await receipt("b3", "UNDELIV", "027", {
        networkErrorCode: Buffer.from([3, 0, 27]),
        doneDate: "2501011305",
      }),
    ).toBe(0);
    await waitFor(
      async () => (await statuses(ids)).join() === "DELIVERED,DELIVERY_ERROR",
      20_000,
      "final",
    );
    const [delivered, failed] = await docs(ids);
    expect(failed?.reason).toBe("Unreachable");
    expect(failed?.partReceipts).toEqual([
      {
        carrierId: "b3",
        stat: "UNDELIV",
        err: "027",
        networkErrorCode: "03001b",
        doneTime: "2501011305",
      },
    ]);
    expect(delivered?.partReceipts).toEqual([
      { carrierId: "a1", stat: "DELIVRD", err: "000", doneTime: "2501011201" },
    ]);
    // A later receipt of another part changes nothing.
    expect(await receipt("a2", "UNDELIV", "001")).toBe(0);
    expect(await statuses(ids)).toEqual(["DELIVERED", "DELIVERY_ERROR"]);
  });

  it("waits for every part's own receipt with `each`", async () => {
    await start({ "4915500022": ["c1", "c2"] }, { multipartReceipts: "each" });
    const ids = await sent(["+4915500022"], 2);
    expect(await receipt("c1", "DELIVRD")).toBe(0);
    expect(await statuses(ids)).toEqual(["SENT"]);
    expect(await receipt("c2", "DELIVRD")).toBe(0);
    await waitFor(async () => (await statuses(ids))[0] === "DELIVERED", 20_000, "DELIVERED");
  });
});
