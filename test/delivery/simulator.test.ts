/** The simulator carrier: outcomes by number, receipts kept durably until acknowledged. */
import { type CommandStartedEvent, MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CarrierPart, CarrierReceipt } from "../../src/delivery/carrier.ts";
import { SimulatorCarrier, type SimulatorCarrierOptions } from "../../src/delivery/simulator.ts";
import { simulatedOutcome } from "../../src/delivery/simulator-numbers.ts";
import { testDatabase, testServer } from "../support/database.ts";

let database: Awaited<ReturnType<typeof testDatabase>>;

beforeAll(async () => {
  database = await testDatabase();
});
afterAll(async () => {
  await database?.close();
});

function part(messageId: number, to: string, partIndex = 0, partCount = 1): CarrierPart {
  return {
    messageId,
    partId: messageId * 10 + partIndex,
    partIndex,
    partCount,
    to,
    from: "Sim",
    text: "x",
    expiresAt: new Date(Date.now() + 3_600_000),
  };
}

async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("simulated outcome", () => {
  it.each([
    ["+9995550001", { kind: "SEND_ERROR" }],
    ["+9995550002", { kind: "DELIVERY_ERROR", reason: "Unreachable" }],
    ["+9995550003", { kind: "DELIVERY_ERROR", reason: "Expired" }],
    ["+9995550004", { kind: "DELIVERY_ERROR", reason: "SIM card full" }],
    ["+9995550005", { kind: "DELIVERY_ERROR", reason: "Unroutable" }],
    ["+9995550006", { kind: "DELIVERY_ERROR", reason: "Undelivered" }],
    ["+9995550007", { kind: "NO_RECEIPT" }],
    ["+9995550008", { kind: "DELIVERED" }],
    ["+9995550000", { kind: "DELIVERED" }],
    ["9995550002", { kind: "DELIVERY_ERROR", reason: "Unreachable" }],
    ["+15550000001", { kind: "DELIVERED" }],
    ["+4479990007", { kind: "DELIVERED" }],
  ])("%s → %o", (to, outcome) => {
    expect(simulatedOutcome(to)).toEqual(outcome);
  });
});

describe("simulator carrier", () => {
  it("answers each part, keeps receipts until the handler acknowledges them", async () => {
    const carrier = new SimulatorCarrier({
      db: database.db,
      sendDelayMs: 0,
      receiptDelayMs: 50,
      pollIntervalMs: 50,
      collectionName: "receipts_a",
    });
    const results = await carrier.submit([
      part(1, "+15550000001"),
      part(2, "+9995550001"),
      part(3, "+9995550002"),
      part(4, "+9995550007"),
      part(5, "+15550000002", 0, 2),
      part(5, "+15550000002", 1, 2),
    ]);
    expect(results.map((r) => r.ok)).toEqual([true, false, true, true, true, true]);
    expect(await carrier.pendingReceipts()).toBe(4); // not for SEND_ERROR nor for the no-receipt number
    const got: CarrierReceipt[] = [];
    await carrier.start(async (receipts) => {
      got.push(...receipts);
      return {};
    });
    try {
      await eventually(() => got.length === 4);
      const byMessage = new Map(got.map((r) => [r.messageId, r]));
      expect(byMessage.get(1)).toMatchObject({ status: "DELIVERED" });
      expect(byMessage.get(3)).toMatchObject({ status: "DELIVERY_ERROR", reason: "Unreachable" });
      expect(got.filter((r) => r.messageId === 5)).toHaveLength(2);
      const carrierIds = results.flatMap((r) => (r.ok ? [r.carrierId] : []));
      for (const receipt of got) expect(carrierIds).toContain(receipt.carrierId);
      await eventually(async () => (await carrier.pendingReceipts()) === 0);
    } finally {
      await carrier.stop();
    }
  });

  it("keeps unacknowledged receipts across a restart and offers retried ones again", async () => {
    const first = new SimulatorCarrier({
      db: database.db,
      sendDelayMs: 0,
      receiptDelayMs: 100,
      collectionName: "receipts_b",
    });
    const results = await first.submit([part(11, "+15550000011"), part(12, "+9995550004")]);
    // the first instance never delivers them (it is gone before they are due)
    await first.stop();

    const second = new SimulatorCarrier({
      db: database.db,
      sendDelayMs: 0,
      receiptDelayMs: 100,
      pollIntervalMs: 50,
      collectionName: "receipts_b",
    });
    const offers: string[] = [];
    let refusedOnce = false;
    await second.start(async (receipts) => {
      offers.push(...receipts.map((r) => r.carrierId));
      const retry = receipts
        .filter((r) => r.messageId === 11 && !refusedOnce)
        .map((r) => r.carrierId);
      if (retry.length > 0) refusedOnce = true;
      return { retry };
    });
    try {
      const first11 = results[0]?.ok ? results[0].carrierId : "";
      await eventually(() => offers.filter((id) => id === first11).length === 2);
      await eventually(async () => (await second.pendingReceipts()) === 0);
      expect(offers.filter((id) => id !== first11)).toHaveLength(1);
    } finally {
      await second.stop();
    }
  });

  it("offers a receipt again when the handler fails", async () => {
    const carrier = new SimulatorCarrier({
      db: database.db,
      sendDelayMs: 0,
      receiptDelayMs: 0,
      pollIntervalMs: 50,
      collectionName: "receipts_c",
    });
    await carrier.submit([part(21, "+15550000021")]);
    let calls = 0;
    await carrier.start(async () => {
      calls++;
      if (calls === 1) throw new Error("database down");
      return {};
    });
    try {
      await eventually(async () => calls >= 2 && (await carrier.pendingReceipts()) === 0);
    } finally {
      await carrier.stop();
    }
  });

  /**
   * A started simulator whose handler call for the first message is held until `releaseFirst`;
   * `offered` lists each handler call's message ids.
   */
  async function holdingFirst(first: number, options: Partial<SimulatorCarrierOptions>) {
    const carrier = new SimulatorCarrier({
      db: database.db,
      sendDelayMs: 0,
      receiptDelayMs: 0,
      ...options,
    });
    await carrier.submit([part(first, `+1555000${String(first).padStart(4, "0")}`)]);
    let releaseFirst = () => {};
    const firstHeld = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    const offered: number[][] = [];
    await carrier.start(async (receipts) => {
      offered.push(receipts.map((r) => r.messageId ?? -1));
      if (receipts.some((r) => r.messageId === first)) await firstHeld;
      return {};
    });
    await eventually(() => offered.length === 1);
    return { carrier, offered, releaseFirst };
  }

  it("offers receipts that came due while an earlier handler call is still storing its batch", async () => {
    const { carrier, offered, releaseFirst } = await holdingFirst(31, {
      pollIntervalMs: 50,
      collectionName: "receipts_d",
    });
    try {
      await carrier.submit([part(32, "+15550000032")]);
      // Offered beside the held call, not after it.
      await eventually(() => offered.some((ids) => ids.includes(32)));
      expect(offered).toEqual([[31], [32]]);
    } finally {
      releaseFirst();
      await carrier.stop();
    }
    expect(await carrier.pendingReceipts()).toBe(0);
  });

  it("goes on offering receipts after every delivery slot was taken", async () => {
    const { carrier, offered, releaseFirst } = await holdingFirst(41, {
      pollIntervalMs: 20,
      deliveriesAtOnce: 1,
      collectionName: "receipts_e",
    });
    try {
      await carrier.submit([part(42, "+15550000042")]);
      // Polls while the one slot is taken must not stop the delivery of the next receipt.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(offered).toEqual([[41]]);
      releaseFirst();
      await eventually(async () => (await carrier.pendingReceipts()) === 0);
      expect(offered).toEqual([[41], [42]]);
    } finally {
      releaseFirst();
      await carrier.stop();
    }
  });

  /**
   * A started carrier whose poll never comes within a test (only due times bring receipts);
   * `offered` lists the message ids handed to its handler.
   */
  async function withoutPoll(
    options: Pick<SimulatorCarrierOptions, "db" | "receiptDelayMs" | "collectionName">,
  ) {
    const carrier = new SimulatorCarrier({ sendDelayMs: 0, pollIntervalMs: 600_000, ...options });
    const offered: number[] = [];
    await carrier.start(async (receipts) => {
      offered.push(...receipts.map((r) => r.messageId ?? -1));
      return {};
    });
    return { carrier, offered };
  }

  it("offers each submission's receipts when they come due, not at the next poll", async () => {
    const { carrier, offered } = await withoutPoll({
      db: database.db,
      receiptDelayMs: 300,
      collectionName: "receipts_f",
    });
    try {
      // The second submission's receipt comes due after the first's, which the alarm is set for.
      await carrier.submit([part(51, "+15550000051")]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await carrier.submit([part(52, "+15550000052")]);
      await eventually(() => offered.includes(52), 20_000);
      expect(offered).toEqual([51, 52]);
    } finally {
      await carrier.stop();
    }
  });

  it("claims its own receipts by id when they come due: no read of the receipts", async () => {
    const monitored = new MongoClient(testServer().uri, { monitorCommands: true });
    const commands: CommandStartedEvent[] = [];
    monitored.on("commandStarted", (event) => {
      if (event.command[event.commandName] === "receipts_g") commands.push(event);
    });
    const { carrier, offered } = await withoutPoll({
      db: monitored.db(database.db.databaseName),
      receiptDelayMs: 200,
      collectionName: "receipts_g",
    });
    try {
      // The start looks for receipts due from before (a read); then only the alarm wakes it.
      await eventually(() => commands.some((c) => c.commandName === "find"));
      commands.length = 0;
      await carrier.submit([part(61, "+15550000061"), part(62, "+15550000062")]);
      await eventually(async () => (await carrier.pendingReceipts()) === 0);
      expect(offered).toEqual([61, 62]);
      // Kept, claimed by id, acknowledged (the counts are the test's own; after a handler call
      // the pump looks again for receipts due from elsewhere).
      const names = commands.map((c) => c.commandName).filter((n) => n !== "aggregate");
      expect(names.slice(0, names.indexOf("delete") + 1)).toEqual(["insert", "update", "delete"]);
    } finally {
      await carrier.stop();
      await monitored.close();
    }
  });
});
