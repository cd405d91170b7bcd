/**
 * A keyword's reply across a failure between its two writes (issue 26, "Replies": one reply per
 * (account, number, keyword) per 5 minutes). The service (SMS_CARRIER=smpp, the test SMSC) reaches
 * its database through the fault proxy; a handset's HELP comes in, its reply slot is taken, and
 * the insert of the reply message is cut on the wire, as a crash between the two would leave it.
 * The intake then fails the MO (ESME_RX_T_APPN) and the SMSC delivers it again: the redelivery
 * must finish the reply the slot was taken for, once, and the reply reach the handset.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { inboundMessagesCollection } from "../../src/store/inbound-messages.ts";
import { assignNumber } from "../../src/store/numbers.ts";
import type { FaultyService } from "../support/faulty-database.ts";
import { startFaultyService } from "../support/faulty-database.ts";
import { waitFor } from "../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../support/smsc.ts";

const NUMBER = "+4930777001";
const HANDSET = "4915100000071";

let smsc: TestSmsc;
let faulty: FaultyService;

beforeAll(async () => {
  // An MO not answered with 0 goes again after 500 ms.
  smsc = await startSmsc({ config: { resendUnackedMs: 500 } });
  faulty = await startFaultyService({
    SMS_RUN_WORKERS: "true",
    SMS_CARRIER: "smpp",
    SMS_SMPP_URL: smsc.url,
  });
  await waitFor(async () => (await smsc.binds()).length === 1, 10_000, "the service bound");
}, 120_000);

afterAll(async () => {
  await faulty?.close();
  await smsc?.stop();
});

it("sends a HELP's reply once when its insert failed after the reply slot was taken", {
  timeout: 60_000,
}, async () => {
  const account = await faulty.service.createAccount();
  await assignNumber(faulty.direct.db, account.apiKey, NUMBER);
  // Every insert into messages fails on the wire (the driver's retry too) until the SMSC has had
  // a failure answer: the only insert is the reply's, after its slot.
  const cut = faulty.proxy.addRule((c) =>
    c.name === "insert" && c.collection === "messages" ? "cut-before" : undefined,
  );
  try {
    const sent = smsc.mo(HANDSET, NUMBER.slice(1), "HELP", { resend: true, waitMs: 5_000 });
    await waitFor(
      async () => (await smsc.moParts()).some((part) => part.statuses.some((s) => s !== 0)),
      20_000,
      "the MO failed while the reply's insert is cut",
    );
    await sent;
  } finally {
    cut();
  }
  await waitFor(
    async () => (await smsc.moParts()).every((part) => part.done),
    20_000,
    "the redelivered MO answered ESME_ROK",
  );
  const [part] = await smsc.moParts();
  expect(part?.statuses.at(-1)).toBe(0);
  expect(part?.attempts).toBeGreaterThanOrEqual(2);

  // One inbound message, one reply, and the reply reached the handset.
  const direct = faulty.direct;
  expect(await inboundMessagesCollection(direct.db).countDocuments({ to: NUMBER })).toBe(1);
  const replies = await direct.messages
    .find({ accountId: account.apiKey, keywordReply: "HELP" })
    .toArray();
  expect(replies.map((m) => [m.to, m.from])).toEqual([[`+${HANDSET}`, NUMBER]]);
  await waitFor(
    async () =>
      (await smsc.pdus({ command: "submit_sm" })).some((p) => p.destination_addr === HANDSET),
    20_000,
    "the reply submitted to the SMSC",
  );
});
