/**
 * The SMPP adapter when the link misbehaves, against the test SMSC: enquire_link both ways, an
 * unbind or a dropped connection from the SMSC (rebinding), a submit_sm_resp that never comes
 * (the bind is dropped, the part submitted again), no bind at all (submit waits, then throws;
 * nothing is failed), TLS for smpps://, receipts answered only once stored (and unknown ones after
 * a bounded hold), and an SMSC killed and restarted in the middle of a batch, which still ends
 * with every message final.
 */
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { connect, type Server } from "node:net";
import { dirname, join } from "node:path";
import { createServer as createTlsServer } from "node:tls";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { CarrierReceipt } from "../../../src/delivery/carrier.ts";
import type { SmppCarrier } from "../../../src/delivery/smpp-carrier/adapter.ts";
import { CarrierUnavailable } from "../../../src/delivery/smpp-carrier/submit-calls.ts";
import { commitBatch } from "../../support/batches.ts";
import {
  designedOutcome,
  insertAccount,
  insertMessages,
  nextTestId,
  testMessage,
} from "../../support/fixtures.ts";
import {
  allFinal,
  deliveryService,
  partsOf,
  recordingLogger,
  smppCarrier,
  waitFor,
} from "../../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../../support/smsc.ts";
import { useTestStore } from "../../support/store.ts";
import { startWebhookReceiver } from "../../support/webhook-receiver.ts";

const fixture = useTestStore();
let smsc: TestSmsc;
const carriers: SmppCarrier[] = [];

beforeAll(async () => {
  smsc = await startSmsc({ config: { receiptDelayMs: 20 } });
});

// The SMSC sends receipts to any bind of the account: each test's carriers go with it.
afterEach(async () => {
  await Promise.all(carriers.splice(0).map((c) => c.stop()));
});

afterAll(async () => {
  await smsc?.stop();
});

beforeEach(async () => {
  await smsc.configure({ answerDelayMs: 0, enquireLinkMs: 10_000, receiptDelayMs: 20 });
  await smsc.reset();
});

async function started(
  options: Parameters<typeof smppCarrier>[1] = {},
  onReceipts: (r: CarrierReceipt[]) => Promise<{ retry?: string[] }> = async () => ({}),
) {
  const carrier = smppCarrier(smsc, options);
  carriers.push(carrier);
  await carrier.start(onReceipts);
  await waitFor(() => carrier.status().state === "bound", 10_000, "bound");
  return carrier;
}

async function bindsOf(): Promise<number[]> {
  return (await smsc.binds()).map((b) => b.bind);
}

describe("keep-alive and rebinding", () => {
  it("sends enquire_link and answers the SMSC's", async () => {
    await smsc.configure({ enquireLinkMs: 200 });
    const carrier = await started({ enquireLinkMs: 200 });
    const [bind] = carrier.status().binds as { bind: number }[];
    expect(bind).toBeDefined();
    await waitFor(async () => {
      const log = await smsc.pdus({ command: ["enquire_link", "enquire_link_resp"] });
      const ours = log.filter((p) => p.command === "enquire_link" && p.dir === "in");
      const answered = log.filter((p) => p.command === "enquire_link_resp" && p.dir === "out");
      const theirs = log.filter((p) => p.command === "enquire_link" && p.dir === "out");
      const answers = log.filter((p) => p.command === "enquire_link_resp" && p.dir === "in");
      return ours.length >= 2 && answered.length >= 2 && theirs.length >= 2 && answers.length >= 2;
    }, 10_000);
    await carrier.stop();
  });

  it("answers the SMSC's unbind, binds again, and rebinds after a dropped connection", async () => {
    const log = recordingLogger();
    const carrier = await started({ logger: log });
    const first = await bindsOf();
    await smsc.unbind();
    await waitFor(
      async () => {
        const now = await bindsOf();
        return now.length === 1 && !first.includes(now[0]!);
      },
      10_000,
      "bound again after unbind",
    );
    const unbindResp = await smsc.pdus({ command: "unbind_resp" });
    expect(unbindResp.filter((p) => p.dir === "in")).toHaveLength(1);
    const second = await bindsOf();
    await smsc.drop();
    await waitFor(
      async () => {
        const now = await bindsOf();
        return now.length === 1 && !second.includes(now[0]!);
      },
      10_000,
      "bound again after a drop",
    );
    expect((await carrier.submit(partsOf(["still works"])))[0]?.ok).toBe(true);
    expect(log.text()).toContain("the SMSC unbound");
    expect(log.text()).toContain("disconnected");
    expect(log.text()).not.toContain(smsc.password);
    await carrier.stop();
    // stop unbinds
    expect((await smsc.pdus({ command: "unbind" })).filter((p) => p.dir === "in")).toHaveLength(1);
  });

  it("drops a bind whose submit_sm_resp does not come, and submits the part again", async () => {
    const log = recordingLogger();
    const carrier = await started({ logger: log, responseTimeoutMs: 300 });
    await smsc.configure({ answerDelayMs: 1_500 });
    const pending = carrier.submit(partsOf(["late answer"]));
    await waitFor(() => log.text().includes("bind broken"), 10_000, "bind dropped");
    await smsc.configure({ answerDelayMs: 0 });
    const [result] = await pending;
    expect(result?.ok).toBe(true);
    const submits = await smsc.pdus({ command: "submit_sm" });
    expect(submits.length).toBeGreaterThanOrEqual(2); // the same part, on a new bind
    expect(new Set(submits.map((p) => p.bind)).size).toBeGreaterThanOrEqual(2);
    // the carrier id is the answer of the submission that was answered
    const answered = (await smsc.pdus({ command: "submit_sm_resp" })).filter((p) => p.status === 0);
    expect(answered.map((p) => p.message_id)).toContain(result?.ok ? result.carrierId : "");
    await carrier.stop();
  });

  it("waits for a bind while there is none, then throws; nothing is refused", async () => {
    const carrier = await started({ unboundWaitMs: 400, backoffInitialMs: 100, backoffMaxMs: 200 });
    await smsc.kill();
    await waitFor(() => carrier.status().state === "unbound", 10_000);
    const error = await carrier.submit(partsOf(["nobody home"])).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CarrierUnavailable);
    // a submit that starts while unbound goes through once the SMSC is back within the wait
    const slow = smppCarrier(smsc, {
      unboundWaitMs: 20_000,
      backoffInitialMs: 100,
      backoffMaxMs: 200,
    });
    carriers.push(slow);
    await slow.start(async () => ({}));
    const waiting = slow.submit(partsOf(["patience"]));
    await new Promise((r) => setTimeout(r, 300));
    await smsc.restart();
    expect((await waiting)[0]?.ok).toBe(true);
    await slow.stop();
    await carrier.stop();
  });
});

describe("TLS", () => {
  let proxy: Server;
  let port: number;
  const dir = join(dirname(fileURLToPath(import.meta.url)), "../../support/tls");
  const cert = readFileSync(join(dir, "cert.pem"));

  beforeAll(async () => {
    // A TLS front for the test SMSC (it speaks plain TCP), as stunnel would be.
    proxy = createTlsServer({ key: readFileSync(join(dir, "key.pem")), cert }, (socket) => {
      const upstream = connect(smsc.port, "127.0.0.1");
      socket.pipe(upstream).pipe(socket);
      const close = () => {
        socket.destroy();
        upstream.destroy();
      };
      socket.on("error", close).on("close", close);
      upstream.on("error", close).on("close", close);
    });
    proxy.listen(0, "127.0.0.1");
    await once(proxy, "listening");
    port = (proxy.address() as { port: number }).port;
  });
  afterAll(() => proxy?.close());

  it("binds over smpps:// with the SMSC's certificate checked", async () => {
    const url = `smpps://${smsc.systemId}:${smsc.password}@127.0.0.1:${port}`;
    const carrier = smppCarrier({ url }, { tlsOptions: { ca: cert } });
    carriers.push(carrier);
    await carrier.start(async () => ({}));
    expect((await carrier.submit(partsOf(["over TLS"])))[0]?.ok).toBe(true);
    await carrier.stop();

    const log = recordingLogger();
    const untrusted = smppCarrier({ url }, { logger: log, unboundWaitMs: 300 });
    carriers.push(untrusted);
    await untrusted.start(async () => ({}));
    await expect(untrusted.submit(partsOf(["refused"]))).rejects.toBeInstanceOf(CarrierUnavailable);
    expect(log.text()).toMatch(/cannot connect.*certificate/i);
    await untrusted.stop();
  });
});

describe("receipts", () => {
  it("answers a receipt only once it is stored; holds one the worker cannot match yet", async () => {
    let storable = false;
    const offered: string[] = [];
    const carrier = await started({}, async (receipts) => {
      offered.push(...receipts.map((r) => r.carrierId));
      return { retry: storable ? [] : receipts.map((r) => r.carrierId) };
    });
    const [result] = await carrier.submit(partsOf(["receipt"]));
    const carrierId = result?.ok ? result.carrierId : "";
    await waitFor(() => offered.filter((id) => id === carrierId).length >= 2, 10_000);
    // not answered: the SMSC still holds it, and no deliver_sm_resp went out
    expect((await smsc.receipts()).map((r) => r.message_id)).toContain(carrierId);
    expect(await smsc.pdus({ command: "deliver_sm_resp" })).toEqual([]);
    storable = true;
    await waitFor(async () => (await smsc.receipts()).length === 0, 10_000, "receipt answered");
    const answers = await smsc.pdus({ command: "deliver_sm_resp" });
    expect(answers.length).toBeGreaterThanOrEqual(1);
    expect(answers.every((p) => p.status === 0 && p.dir === "in")).toBe(true);
    await carrier.stop();
  });

  it("answers, logs and drops a receipt for an id nobody knows after the hold", async () => {
    const log = recordingLogger();
    const carrier = await started(
      { logger: log, holdUnknownReceiptsMs: 500 },
      async (receipts) => ({ retry: receipts.map((r) => r.carrierId) }),
    );
    const [result] = await carrier.submit(partsOf(["orphan"]));
    await waitFor(async () => (await smsc.receipts()).length === 0, 10_000, "receipt answered");
    expect(log.text()).toContain("unknown message ids acknowledged and dropped");
    expect(log.text()).toContain(result?.ok ? result.carrierId : "?");
    await carrier.stop();
  });
});

describe("an SMSC killed and restarted in the middle of a batch", () => {
  it("ends with every message final, none failed for the outage", {
    timeout: 120_000,
  }, async () => {
    await smsc.configure({ answerDelayMs: 10 });
    const receiver = await startWebhookReceiver();
    const account = await insertAccount(fixture.store, `${receiver.baseUrl}/restart`);
    const batchId = nextTestId();
    // (8 and 9, refused once each, are in smpp-outcomes: here they would only slow the batch.)
    const digits = ["0", "1", "2", "4", "5", "6"];
    const batch = Array.from({ length: 400 }, (_, i) =>
      testMessage(account._id, `+999555${String(10_000 + i)}${digits[i % digits.length]}`, {
        batchId,
        ttl: 20,
      }),
    );
    const ids = await insertMessages(fixture.store, batch);
    await commitBatch(fixture.store, batchId, account._id);
    const carrier = smppCarrier(smsc, { backoffInitialMs: 300, backoffMaxMs: 1_000 });
    const service = deliveryService(fixture.store, carrier, "restart");
    await service.start();
    try {
      await waitFor(
        async () => (await smsc.pdus({ command: "submit_sm" })).length >= 100,
        30_000,
        "a quarter submitted",
      );
      await smsc.kill();
      await new Promise((r) => setTimeout(r, 1_000));
      await smsc.restart();
      await smsc.configure({ answerDelayMs: 10 });
      await waitFor(() => allFinal(fixture.store, ids), 90_000, "every message final");
    } finally {
      await service.stop();
      await receiver.close();
    }
    const docs = await fixture.store.messages.find({ _id: { $in: ids } }).toArray();
    let lostReceipts = 0;
    for (const doc of docs) {
      const want = designedOutcome(doc.to);
      if (
        doc.status === "DELIVERY_ERROR" &&
        doc.reason === "Expired" &&
        want.status !== "SEND_ERROR"
      ) {
        // SENT before the kill: the killed SMSC forgot its receipt; the ttl ended it.
        if (want.reason !== "Expired") lostReceipts++;
        continue;
      }
      expect({ to: doc.to, status: doc.status, reason: doc.reason }).toEqual({
        to: doc.to,
        status: want.status,
        reason: want.reason,
      });
    }
    // Nothing became SEND_ERROR for the outage: exactly the designed ones did.
    const sendErrors = docs.filter((d) => d.status === "SEND_ERROR").length;
    expect(sendErrors).toBe(
      docs.filter((d) => designedOutcome(d.to).status === "SEND_ERROR").length,
    );
    console.log(
      `SMSC restart: ${docs.length} messages final; ${lostReceipts} expired because the killed SMSC lost their receipts; worker ${JSON.stringify(service.worker.stats())}`,
    );
  });
});
