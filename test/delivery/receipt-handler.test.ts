/**
 * The worker's receipt handler (delivery/receipts.ts) on a real database: a receipt that overtook
 * its submission's record waits for it, and holds back no other receipt of the same call.
 */
import { describe, expect, it } from "vitest";
import { ReceiptHandler } from "../../src/delivery/receipts.ts";
import { LaneMarker } from "../../src/scheduling/lanes.ts";
import { eventually, insertMessages, testMessage } from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
const quiet = { debug: () => undefined };

/** Two messages submitted (SENT, one part each with its carrier id); their ids. */
async function twoSent(account: string): Promise<[number, number]> {
  const [first, second] = (await insertMessages(fixture.store, [
    testMessage(account, "+4915140000001"),
    testMessage(account, "+4915140000002"),
  ])) as [number, number];
  for (const id of [first, second])
    await fixture.store.messages.updateOne(
      { _id: id },
      { $set: { status: "SENT", carrierIds: [`c-${id}`] } },
    );
  return [first, second];
}

const statusOf = async (id: number) =>
  (await fixture.store.messages.findOne({ _id: id }, { projection: { status: 1 } }))?.status;

describe("receipt handler", () => {
  it("applies a call's receipts at once, beside one that waits for its submission's record", async () => {
    const [recorded, recording] = await twoSent("receipts-a");
    const handler = new ReceiptHandler(
      fixture.store,
      new LaneMarker(fixture.store.lanes),
      { receipts: 0, receiptChanges: 0 },
      quiet,
    );
    let finishRecord = () => {};
    handler.awaitRecording(
      [{ _id: recording }],
      new Promise<void>((resolve) => {
        finishRecord = resolve;
      }),
    );
    const handled = handler.handle(
      [recorded, recording].map((id) => ({
        carrierId: `c-${id}`,
        messageId: id,
        status: "DELIVERED" as const,
        at: new Date(),
      })),
    );
    // The first message's receipt does not wait for the second's record.
    await eventually(async () => (await statusOf(recorded)) === "DELIVERED", 10_000);
    expect(await statusOf(recording)).toBe("SENT");
    finishRecord();
    expect(await handled).toEqual({ retry: [] });
    expect(await statusOf(recording)).toBe("DELIVERED");
  });
});
