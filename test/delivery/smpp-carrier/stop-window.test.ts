/**
 * A handset's STOP is answered while the bind's window waits (issue 39; docs/design.md
 * "Carrier-grade SMPP": "An MO is never held by outbound traffic"). Wired as app.ts wires an
 * instance (the delivery worker and the opt-out rules sharing one StopFeed, the inbound intake
 * answering after the opt-out hook), on the test database, bound to the test SMSC (jsmpp), which
 * answers the first submit_sm and holds every later submit_sm_resp: messages to the handset fill
 * the window (the run of two waits for its held answer) and others wait behind it. The STOP's deliver_sm_resp is ESME_ROK and comes, in the
 * SMSC's own log, before any held submit_sm_resp is released; once they are, the messages already
 * written end as the SMSC answers them, the others are withdrawn (SEND_ERROR, refunded), and no
 * submit_sm of theirs follows the STOP's answer. Order and causality only, no durations (the
 * bind's response timeout is long, so a slow machine cannot release the held answers).
 */
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { SmppCarrier } from "../../../src/delivery/smpp-carrier/adapter.ts";
import { DeliveryWorker } from "../../../src/delivery/worker.ts";
import { InboundIntake } from "../../../src/inbound/intake.ts";
import { openOptOuts } from "../../../src/opt-outs/list.ts";
import { OptOutRules } from "../../../src/opt-outs/rules.ts";
import { StopFeed } from "../../../src/opt-outs/stop-feed.ts";
import { OPTED_OUT_ERROR } from "../../../src/opt-outs/withdrawals.ts";
import { markLanesDue } from "../../../src/scheduling/lanes.ts";
import { assignNumber } from "../../../src/store/numbers.ts";
import { IdAllocator } from "../../../src/store/sequences.ts";
import { insertAccount, insertMessages, testMessage } from "../../support/fixtures.ts";
import { smppCarrier, waitFor } from "../../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../../support/smsc.ts";
import { useTestStore } from "../../support/store.ts";

const fixture = useTestStore();
const HANDSET = "+4915155500001";
const NUMBER = "+4930555000";
const SENDS = 6;
const INSTANCE = "stop-window";
/** "promo" in the bytes of a submit_sm (data_coding 3, Latin-1). */
const PROMO_HEX = Buffer.from("promo", "latin1").toString("hex");

let smsc: TestSmsc;
let carrier: SmppCarrier;
let worker: DeliveryWorker;
let stops: StopFeed;

beforeAll(async () => {
  const { store } = fixture;
  smsc = await startSmsc({ config: { receiptDelayMs: 50 } });
  const logger = pino({ level: "silent" });
  stops = new StopFeed({ db: store.db, instanceId: INSTANCE, logger });
  const rules = new OptOutRules({
    store,
    optOuts: openOptOuts(store.db),
    messageIds: new IdAllocator(store.counters, "message", 20),
    pricePerPartMicros: 1_000_000,
    onQueued: async (accountId, deliveryAt, acceptedAt) => {
      await markLanesDue(
        store.lanes,
        new Map([[accountId, { delivery: deliveryAt, notify: acceptedAt }]]),
      );
      worker?.wake();
    },
    stops,
  });
  const intake = new InboundIntake({
    db: store.db,
    now: () => new Date(),
    ids: new IdAllocator(store.counters, "inbound", 20),
    logger,
    // As app.ts: the STOP is on the list before its deliver_sm_resp.
    onInbound: (message) => rules.applyInbound(message),
    reassemblyMs: 1_800_000,
    defaultAlphabet: "gsm7",
  });
  carrier = smppCarrier(smsc, {
    window: 2,
    // The held answers stay held however slow the machine: only the test releases them.
    responseTimeoutMs: 120_000,
    inbound: (parts) => intake.take(parts),
  });
  worker = new DeliveryWorker({
    store,
    carrier,
    logger,
    instanceId: INSTANCE,
    pollIntervalMs: 50,
    screen: (messages) => rules.screen(messages),
    stops,
  });
  await stops.start();
  await worker.start();
  intake.start();
  await waitFor(async () => (await smsc.binds()).length === 1, 20_000, "the bind");
}, 120_000);

afterAll(async () => {
  await smsc?.configure({ hangAfterSubmits: 0 }).catch(() => undefined);
  await worker?.stop();
  await stops?.stop();
  await smsc?.stop();
});

it("answers a STOP while the window waits for held submit_sm_resps; nothing of it is written after", async () => {
  const { store } = fixture;
  const account = await insertAccount(store);
  await assignNumber(store.db, account._id, NUMBER);
  // The first submit_sm is answered; every later one is held until released below.
  await smsc.configure({ hangAfterSubmits: 1 });
  const ids = await insertMessages(
    store,
    Array.from({ length: SENDS }, (_, k) =>
      testMessage(account._id, HANDSET, { from: NUMBER, text: `promo ${k}` }),
    ),
  );
  worker.wake();
  const promos = async () =>
    (await smsc.pdus({ command: "submit_sm" })).filter((p) =>
      p.short_message_hex?.includes(PROMO_HEX),
    );
  // The window of 2 written: one answered, one held, and the run waits for both; the rest of
  // the claim waits behind it.
  await waitFor(async () => (await promos()).length === 2, 30_000, "the window full");

  const stop = await smsc.mo(HANDSET.slice(1), NUMBER.slice(1), "STOP", { waitMs: 60_000 });
  expect(stop.status).toBe(0);
  const log = await smsc.pdus();
  const stopAnswer = log.find(
    (p) => p.command === "deliver_sm_resp" && p.dir === "in" && p.sequence === stop.sequence,
  );
  // Answered while the SMSC still held both submit_sm_resps: only the first one went out.
  expect(stopAnswer).toBeDefined();
  expect(log.filter((p) => p.command === "submit_sm_resp")).toHaveLength(1);
  const writtenBefore = (await promos()).map((p) => p.index);
  expect(writtenBefore).toHaveLength(2);
  expect(writtenBefore.every((i) => i < (stopAnswer?.index ?? 0))).toBe(true);

  await smsc.configure({ hangAfterSubmits: 0 });
  const ours = () => store.messages.find({ _id: { $in: ids } }).toArray();
  await waitFor(
    async () => (await ours()).every((m) => m.status === "DELIVERED" || m.status === "SEND_ERROR"),
    60_000,
    "every message final",
  );
  const docs = await ours();
  const withdrawn = docs.filter((m) => m.status === "SEND_ERROR");
  // What was written before the STOP reached the handset; nothing else was written.
  expect(docs.filter((m) => m.status === "DELIVERED")).toHaveLength(writtenBefore.length);
  expect(withdrawn).toHaveLength(SENDS - writtenBefore.length);
  for (const m of withdrawn) expect(m.sendError).toBe(OPTED_OUT_ERROR);
  expect((await promos()).map((p) => p.index)).toEqual(writtenBefore);
  // In the SMSC's log, every held submit_sm_resp went out after the STOP's answer.
  const answers = (await smsc.pdus({ command: "submit_sm_resp" })).map((p) => p.index);
  expect(answers.slice(1).every((i) => i > (stopAnswer?.index ?? Number.POSITIVE_INFINITY))).toBe(
    true,
  );
}, 180_000);
