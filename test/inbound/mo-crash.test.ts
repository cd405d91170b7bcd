/**
 * Crash between storing an MO and answering it (issue 26, "Tests"): a process running the SMPP
 * adapter and the intake is killed with SIGKILL once an MO is stored and before its
 * deliver_sm_resp; the test SMSC delivers it again to the survivor; there is exactly one inbound
 * message, the survivor hands it to the hook (opt-outs) once, and its account's receiver gets
 * exactly one inbound webhook for it. A single MO and the last part of a long one.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { SmppCarrier } from "../../src/delivery/smpp-carrier/adapter.ts";
import { InboundIntake } from "../../src/inbound/intake.ts";
import { InboundWebhookQueue } from "../../src/notifier/inbound-queue.ts";
import { Notifier } from "../../src/notifier/notifier.ts";
import {
  type InboundMessageDoc,
  inboundMessagesCollection,
} from "../../src/store/inbound-messages.ts";
import { assignNumber } from "../../src/store/numbers.ts";
import { IdAllocator } from "../../src/store/sequences.ts";
import { testServer } from "../support/database.ts";
import { insertAccount } from "../support/fixtures.ts";
import { recordingLogger, smppCarrier, waitFor } from "../support/smpp.ts";
import { type MoOptions, startSmsc, type TestSmsc } from "../support/smsc.ts";
import { useTestStore } from "../support/store.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../support/webhook-receiver.ts";

const fixture = useTestStore();
let smsc: TestSmsc;
let survivor: SmppCarrier | undefined;
let receiver: WebhookReceiver;
let accountId: string;

beforeAll(async () => {
  // Unanswered MO go again after 500 ms.
  smsc = await startSmsc({ config: { resendUnackedMs: 500 } });
  receiver = await startWebhookReceiver();
  accountId = (await insertAccount(fixture.store))._id;
  await fixture.store.accounts.updateOne(
    { _id: accountId },
    { $set: { inboundUrl: `${receiver.baseUrl}/inbound` } },
  );
  await assignNumber(fixture.store.db, accountId, "+4930222001");
  await assignNumber(fixture.store.db, accountId, "+4930222002");
}, 120_000);

afterAll(async () => {
  await survivor?.stop();
  await smsc?.stop();
  await receiver?.close();
});

/** Sends an MO to a doomed process, which dies once it stored it; a survivor gets it again. */
async function crashAndRecover(
  to: string,
  text: string,
  options: MoOptions,
): Promise<InboundMessageDoc[]> {
  await smsc.reset();
  const doomed = spawn(process.execPath, ["--import", "tsx", "test/support/inbound-process.ts"], {
    env: {
      ...process.env,
      TEST_MONGODB_URI: testServer().uri,
      INBOUND_DB: fixture.store.db.databaseName,
      SMPP_URL: smsc.url,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(doomed, "exit");
  await waitFor(async () => (await smsc.binds()).length === 1, 30_000, "the doomed process bound");
  const sent = await smsc.mo("4915100000099", to, text, {
    ...options,
    resend: true,
    waitMs: 5_000,
  });
  const [, signal] = await exited;
  expect(signal).toBe("SIGKILL");
  // The doomed process stored it and never answered it.
  expect(sent.parts.at(-1)?.status).toBeNull();
  const assigned = `+${to}`;
  expect(await inboundMessagesCollection(fixture.store.db).countDocuments({ to: assigned })).toBe(
    1,
  );

  const handed: InboundMessageDoc[] = [];
  const notifier = new Notifier({
    store: fixture.store,
    logger: recordingLogger(),
    instanceId: "survivor",
    allowPrivate: true,
  });
  await notifier.start();
  const intake = new InboundIntake({
    db: fixture.store.db,
    now: () => new Date(),
    ids: new IdAllocator(fixture.store.counters, "inbound"),
    logger: recordingLogger(),
    onInbound: async (message) => {
      handed.push(message);
    },
    webhooks: new InboundWebhookQueue(fixture.store, recordingLogger(), () =>
      notifier.wakeInbound(),
    ),
    reassemblyMs: 1_800_000,
    defaultAlphabet: "gsm7",
  });
  survivor = smppCarrier(smsc, { inbound: (parts) => intake.take(parts) });
  await survivor.start(async () => ({}));
  try {
    // The SMSC delivers it again until answered: now ESME_ROK.
    await waitFor(
      async () => (await smsc.moParts()).every((part) => part.done),
      30_000,
      "answered",
    );
    const last = (await smsc.moParts()).at(-1);
    expect(last?.statuses.at(-1)).toBe(0);
    expect(last?.attempts).toBeGreaterThanOrEqual(2);
    // Its webhook, queued by the doomed process as it stored the message, sent by the survivor.
    await waitFor(
      async () =>
        (await inboundMessagesCollection(fixture.store.db).findOne({ to: assigned }))?.webhook
          ?.state === "delivered",
      30_000,
      "the inbound webhook delivered",
    );
  } finally {
    await survivor.stop();
    survivor = undefined;
    await notifier.stop();
  }
  const stored = await inboundMessagesCollection(fixture.store.db).find({ to: assigned }).toArray();
  expect(stored).toHaveLength(1);
  expect(handed.map((m) => m._id)).toEqual([stored[0]?._id]);
  const webhooks = receiver.requests.filter(
    (r) => r.headers["webhook-id"] === `inbound_${stored[0]?._id}`,
  );
  expect(webhooks.map((r) => [r.answered, JSON.parse(r.body).text])).toEqual([
    [200, stored[0]?.text],
  ]);
  return stored;
}

it("keeps one message when a single MO's process dies between storing it and answering it", {
  timeout: 120_000,
}, async () => {
  const [message] = await crashAndRecover("4930222001", "STOP", {});
  expect(message).toMatchObject({ text: "STOP", optOutType: "STOP", from: "+4915100000099" });
});

it("keeps one message when the process dies after the last part of a long MO made it", {
  timeout: 120_000,
}, async () => {
  const text = "A long answer, cut into three parts by the handset's phone.";
  const [message] = await crashAndRecover("4930222002", text, {
    concat: "udh8",
    ref: 9,
    cuts: [20, 40],
  });
  expect(message).toMatchObject({ text, parts: 3 });
});
