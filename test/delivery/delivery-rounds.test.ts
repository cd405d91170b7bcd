/**
 * Claim rounds (delivery/delivery-rounds.ts) on a real database: rounds side by side in
 * one process on the same account's lane take different messages, none comes back empty.
 */
import { describe, expect, it } from "vitest";
import type { LaneClaim } from "../../src/delivery/delivery-rounds.ts";
import { DeliveryRounds } from "../../src/delivery/delivery-rounds.ts";
import { FairLanes, LaneMarker } from "../../src/scheduling/lanes.ts";
import { insertMessages, testMessage } from "../support/fixtures.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();

describe("claim rounds", () => {
  it("two rounds at once on one account's lane claim the next messages each", async () => {
    const account = "rounds-a";
    await insertMessages(
      fixture.store,
      Array.from({ length: 40 }, (_, i) => testMessage(account, `+49151400${String(10_000 + i)}`)),
      new Date(Date.now() - 1_000),
    );
    const claims: LaneClaim[] = [];
    const background: Promise<void>[] = [];
    const rounds = new DeliveryRounds({
      store: fixture.store,
      lanes: new FairLanes(fixture.store.lanes, "delivery", fixture.store.clock),
      marks: new LaneMarker(fixture.store.lanes),
      instanceId: "rounds-test",
      leaseMs: 60_000,
      lanesPerRound: 32,
      maxClaimParts: 10,
      onClaim: (claim) => claims.push(claim),
      track: (work) => background.push(work),
    });
    const parts = await Promise.all([rounds.claim(10), rounds.claim(10), rounds.claim(10)]);
    await Promise.all(background);
    expect(parts).toEqual([10, 10, 10]);
    const ids = claims.flatMap((claim) => claim.messages.map((m) => m._id));
    expect(new Set(ids).size).toBe(30);
  });
});
