/**
 * Crash-safe submission over SMPP (design "Carrier: SMPP 3.4": a crash may resubmit at most the
 * parts that were in flight, never a whole claim). A worker process on the SMPP adapter is killed
 * with SIGKILL while it delivers a batch through the test SMSC; a second one finishes the batch.
 * The SMSC's PDU log counts the parts that reached it twice: at most the window
 * (SMS_SMPP_WINDOW x SMS_SMPP_BINDS).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DeliveryWorker } from "../../src/delivery/worker.ts";
import { commitBatch } from "../support/batches.ts";
import { testServer } from "../support/database.ts";
import { eventually, insertMessages, nextTestId, testMessage } from "../support/fixtures.ts";
import { smppCarrier } from "../support/smpp.ts";
import { type Pdu, startSmsc, type TestSmsc, tlv } from "../support/smsc.ts";
import { useTestStore } from "../support/store.ts";

const fixture = useTestStore();
const BINDS = 2;
const WINDOW = 10;
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
  const batchId = nextTestId();
  const batch = Array.from({ length: 600 }, (_, i) =>
    testMessage("crash", `+49151${String(30_000_000 + i)}`, {
      batchId,
      ...(i % 3 === 0 && {
        parts: 2,
        segments: [
          { id: 2_000_000 + 2 * i, text: "first part" },
          { id: 2_000_001 + 2 * i, text: "second part" },
        ],
      }),
    }),
  );
  const ids = await insertMessages(fixture.store, batch);
  await commitBatch(fixture.store, batchId, "crash");
  const submitted = async () => (await smsc.pdus({ command: "submit_sm" })).length;

  const doomed: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", "test/support/smpp-delivery-process.ts"],
    {
      env: {
        ...process.env,
        TEST_MONGODB_URI: testServer().uri,
        DELIVERY_DB: fixture.store.db.databaseName,
        SMPP_URL: smsc.url,
        SMPP_BINDS: String(BINDS),
        SMPP_WINDOW: String(WINDOW),
        DELIVERY_LEASE_MS: "3000",
      },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  try {
    await eventually(async () => (await submitted()) >= 200, 60_000);
  } finally {
    doomed.kill("SIGKILL");
    if (doomed.exitCode === null) await once(doomed, "exit");
  }
  const submittedByTheDead = await submitted();
  expect(submittedByTheDead).toBeLessThan(800); // really killed in the middle (800 parts in all)

  const carrier = smppCarrier(smsc, { binds: BINDS, window: WINDOW, holdUnknownReceiptsMs: 1_000 });
  const survivor = new DeliveryWorker({
    store: fixture.store,
    carrier,
    logger: pino({ level: "silent" }),
    instanceId: "worker-survivor",
    pollIntervalMs: 50,
  });
  await survivor.start();
  try {
    await eventually(
      async () =>
        (await fixture.store.messages.countDocuments({ _id: { $in: ids }, status: "ACCEPTED" })) ===
        0,
      60_000,
    );
  } finally {
    await survivor.stop();
  }

  const counts = new Map<string, number>();
  for (const pdu of await smsc.pdus({ command: "submit_sm" }))
    counts.set(partKey(pdu), (counts.get(partKey(pdu)) ?? 0) + 1);
  const twice = [...counts.values()].filter((n) => n > 1);
  // Every part reached the SMSC; at most the window's parts twice, never more than twice.
  expect(counts.size).toBe(800);
  expect(twice.length).toBeLessThanOrEqual(BINDS * WINDOW);
  expect(twice.every((n) => n === 2)).toBe(true);
  expect(survivor.stats().resubmittedParts).toBeGreaterThanOrEqual(twice.length);
  expect(survivor.stats().resubmittedParts).toBeLessThanOrEqual(BINDS * WINDOW);
  console.log(
    `SMPP crash safety: killed after ${submittedByTheDead} of 800 parts; ${twice.length} parts submitted twice (window ${BINDS} x ${WINDOW}); survivor resubmitted ${survivor.stats().resubmittedParts}`,
  );
});
