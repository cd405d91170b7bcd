/**
 * The test SMSC itself (test/smsc, started by test/support/smsc.ts), driven by a bare client on
 * the npm `smpp` package: binds, the answer for each number of the simulator's table, receipts
 * and their resending, the PDU log, mobile-originated messages, and a SIGKILL with a restart.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  Client,
  ESME_RBINDFAIL,
  ESME_RMSGQFUL,
  ESME_RSUBMITFAIL,
  ESME_RTHROTTLED,
  text,
} from "../support/smpp-client.ts";
import { startSmsc, type TestSmsc } from "../support/smsc.ts";
import { receiptFields, shortMessage, tlv } from "../support/smsc-pdus.ts";

async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// ---------------------------------------------------------------------------------------------

let smsc: TestSmsc;
const clients: Client[] = [];

async function client(): Promise<Client> {
  const c = await Client.bound(smsc);
  clients.push(c);
  return c;
}

beforeAll(async () => {
  smsc = await startSmsc({ config: { receiptDelayMs: 20, enquireLinkMs: 0 } });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await smsc.configure({ receiptDelayMs: 20, resendUnackedMs: 3000, enquireLinkMs: 0 });
  await smsc.reset();
});
afterAll(async () => {
  await smsc?.stop();
});

describe("test SMSC", () => {
  it("checks the bind's credentials and lists its binds", async () => {
    const wrong = await Client.connect(smsc);
    clients.push(wrong);
    expect(await wrong.bind(smsc.systemId, "nope")).toBe(ESME_RBINDFAIL);

    await client();
    await client();
    const binds = await smsc.binds();
    expect(binds.map((b) => [b.type, b.system_id])).toEqual([
      ["transceiver", "test"],
      ["transceiver", "test"],
    ]);
  });

  it("answers each number as the simulator's table does, with receipts by destination", async () => {
    const c = await client();
    const numbers = {
      delivered: "447700900123",
      sendError: "9990000001",
      unreachable: "9990000002",
      expired: "9990000003",
      simFull: "9990000004",
      unroutable: "9990000005",
      undelivered: "9990000006",
      noReceipt: "9990000007",
    };
    const resps = Object.fromEntries(
      await Promise.all(
        Object.entries(numbers).map(async ([name, to]) => [name, await c.submit(to)] as const),
      ),
    );
    expect(resps.sendError!.command_status).toBe(ESME_RSUBMITFAIL);
    const expected: Record<string, [string, string, number]> = {
      delivered: ["DELIVRD", "000", 2],
      unreachable: ["UNDELIV", "027", 5],
      expired: ["EXPIRED", "000", 3],
      simFull: ["UNDELIV", "032", 5],
      unroutable: ["UNDELIV", "001", 5],
      undelivered: ["UNDELIV", "000", 5],
    };
    for (const [name, [stat, err, state]] of Object.entries(expected)) {
      const resp = resps[name]!;
      expect(resp.command_status).toBe(0);
      expect(resp.message_id).toMatch(/^[0-9a-f]{16}$/);
      const receipt = await eventually(() => c.receiptFor(resp.message_id!));
      expect(receipt.esm_class! & 0x04).toBe(0x04);
      expect(receipt.source_addr).toBe(numbers[name as keyof typeof numbers]);
      expect(receipt.destination_addr).toBe("Acme");
      expect(receipt.message_state).toBe(state);
      const fields = receiptFields(text(receipt));
      expect(fields).toMatchObject({
        id: resp.message_id,
        sub: "001",
        dlvrd: stat === "DELIVRD" ? "001" : "000",
        stat,
        err,
        text: "hello",
      });
      expect(fields["submit date"]).toMatch(/^\d{10}$/);
    }
    // The 7 number is accepted and never gets a receipt.
    expect(resps.noReceipt!.command_status).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(c.receiptFor(resps.noReceipt!.message_id!)).toBeUndefined();
    expect(c.delivered).toHaveLength(6);
    expect(await smsc.receipts()).toEqual([]);
  });

  it("refuses the first submit_sm to an 8 (throttled) or 9 (queue full) number, then delivers", async () => {
    const c = await client();
    for (const [to, firstStatus] of [
      ["9995550008", ESME_RTHROTTLED],
      ["9995550009", ESME_RMSGQFUL],
    ] as const) {
      expect((await c.submit(to)).command_status).toBe(firstStatus);
      const again = await c.submit(to);
      expect(again.command_status).toBe(0);
      const receipt = await eventually(() => c.receiptFor(again.message_id!));
      expect(receiptFields(text(receipt)).stat).toBe("DELIVRD");
      expect((await c.submit(to)).command_status).toBe(0);
    }
    // A reset forgets which numbers were refused already.
    await smsc.reset();
    expect((await c.submit("9995550008")).command_status).toBe(ESME_RTHROTTLED);
  });

  it("logs every PDU both ways with every field of submit_sm and deliver_sm", async () => {
    const c = await client();
    const ucs2 = Buffer.from("Grüße 👋", "utf16le").swap16();
    const resp = await c.submit("+447700900555", "", {
      source_addr_ton: 1,
      source_addr_npi: 1,
      source_addr: "15550001111",
      data_coding: 8,
      short_message: ucs2,
      validity_period: "000000010000000R",
      sar_msg_ref_num: 7,
      sar_total_segments: 2,
      sar_segment_seqnum: 1,
    });
    expect(resp.command_status).toBe(0);
    await eventually(() => c.receiptFor(resp.message_id!));
    const pdus = await eventually(async () => {
      const all = await smsc.pdus();
      return all.some((p) => p.command === "deliver_sm_resp") && all;
    });

    const bind = pdus.find((p) => p.command === "bind_transceiver")!;
    const submit = pdus.find((p) => p.command === "submit_sm")!;
    expect(submit).toMatchObject({
      dir: "in",
      bind: bind.bind,
      status: 0,
      service_type: "",
      source_addr_ton: 1,
      source_addr_npi: 1,
      source_addr: "15550001111",
      dest_addr_ton: 1,
      dest_addr_npi: 1,
      destination_addr: "+447700900555",
      esm_class: 0,
      registered_delivery: 1,
      validity_period: "000000010000000R",
      schedule_delivery_time: "",
      data_coding: 8,
      sm_length: ucs2.length,
    });
    expect(shortMessage(submit).equals(ucs2)).toBe(true);
    expect(tlv(submit, 0x020c)?.readUInt16BE(0)).toBe(7); // sar_msg_ref_num
    expect(tlv(submit, 0x020e)?.readUInt8(0)).toBe(2); // sar_total_segments
    expect(tlv(submit, 0x020f)?.readUInt8(0)).toBe(1); // sar_segment_seqnum

    const submitResp = pdus.find((p) => p.command === "submit_sm_resp")!;
    expect(submitResp).toMatchObject({
      dir: "out",
      sequence: submit.sequence,
      message_id: resp.message_id,
    });
    const deliver = pdus.find((p) => p.command === "deliver_sm")!;
    expect(deliver).toMatchObject({
      dir: "out",
      esm_class: 4,
      source_addr: "+447700900555",
      destination_addr: "15550001111",
      data_coding: 0,
    });
    expect(tlv(deliver, 0x001e)?.toString("latin1")).toBe(`${resp.message_id}\0`);
    expect(tlv(deliver, 0x0427)?.readUInt8(0)).toBe(2);
    // The receipt's text: has '?' for what ASCII and GSM 7-bit do not both show.
    expect(receiptFields(shortMessage(deliver).toString("latin1")).text).toBe("Gr??e ?"); // one code point, one ?
    const deliverResp = pdus.find((p) => p.command === "deliver_sm_resp")!;
    expect(deliverResp).toMatchObject({ dir: "in", status: 0, sequence: deliver.sequence });

    // In the order seen, with times that never go backwards.
    const order = pdus.map((p) => `${p.dir} ${p.command}`);
    expect(order.indexOf("in submit_sm")).toBeLessThan(order.indexOf("out submit_sm_resp"));
    expect(order.indexOf("out submit_sm_resp")).toBeLessThan(order.indexOf("out deliver_sm"));
    expect(pdus.map((p) => p.index)).toEqual(pdus.map((_, i) => i));
    for (let i = 1; i < pdus.length; i++)
      expect(pdus[i]!.at).toBeGreaterThanOrEqual(pdus[i - 1]!.at);
    expect(await smsc.pdus({ command: "submit_sm_resp" })).toEqual([submitResp]);
  });

  it("resends an unacknowledged receipt, also to a client that binds again", async () => {
    await smsc.configure({ resendUnackedMs: 300 });
    const first = await client();
    first.ack = false;
    const resp = await first.submit("447700900777");
    await eventually(() => first.delivered.length >= 2 && first.delivered);
    expect(new Set(first.delivered.map((p) => p.receipted_message_id))).toEqual(
      new Set([resp.message_id]),
    );
    expect(await smsc.receipts()).toMatchObject([{ message_id: resp.message_id, stat: "DELIVRD" }]);

    first.close();
    const second = await client();
    const receipt = await eventually(() => second.receiptFor(resp.message_id!));
    expect(receiptFields(text(receipt)).id).toBe(resp.message_id);
    await eventually(async () => (await smsc.receipts()).length === 0);
    const count = second.delivered.length;
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(second.delivered).toHaveLength(count);
  });

  it("answers after answerDelayMs, throttles above maxTps, sends MO and its own enquire_link", async () => {
    const c = await client();
    await smsc.configure({ answerDelayMs: 150, maxTps: 3, enquireLinkMs: 200 });
    const started = Date.now();
    const statuses = await Promise.all(
      [1, 2, 3, 4, 5].map(async (i) => (await c.submit(`44770090010${i}`)).command_status),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(statuses.filter((s) => s === 0)).toHaveLength(3);
    expect(statuses.filter((s) => s === ESME_RTHROTTLED)).toHaveLength(2);

    const mo = await smsc.mo("+447700900999", "Acme", "STOP please");
    expect(mo.status).toBe(0);
    const moPdu = await eventually(() => c.delivered.find((p) => p.esm_class === 0));
    expect(moPdu).toMatchObject({ source_addr: "447700900999", destination_addr: "Acme" });
    expect(text(moPdu)).toBe("STOP please");

    await eventually(async () =>
      (await smsc.pdus({ command: "enquire_link_resp" })).some((p) => p.dir === "in"),
    );
    const pdus = await smsc.pdus();
    const submits = pdus.filter((p) => p.command === "submit_sm");
    const answers = pdus.filter((p) => p.command === "submit_sm_resp");
    for (const answer of answers) {
      const request = submits.find((s) => s.sequence === answer.sequence)!;
      expect(answer.at - request.at).toBeGreaterThanOrEqual(145);
    }
  });

  it("can be killed and restarted on the same port, forgetting its state", async () => {
    const c = await client();
    await smsc.configure({ dropReceipts: true });
    expect((await c.submit("9990000008")).command_status).toBe(ESME_RTHROTTLED);
    const pid = smsc.pid;

    await smsc.kill();
    await eventually(() => c.closed);
    await smsc.restart();
    expect(smsc.pid).not.toBe(pid);
    expect(await smsc.pdus()).toEqual([]);
    expect((await smsc.config()).dropReceipts).toBe(false);

    const again = await client();
    expect((await again.submit("9990000008")).command_status).toBe(ESME_RTHROTTLED);
    expect((await smsc.binds()).map((b) => b.bind)).toEqual([1]);
  });
});

describe("several test SMSCs", () => {
  it("run side by side on their own ports", async () => {
    const other = await startSmsc({ systemId: "other", password: "pw" });
    try {
      expect(other.port).not.toBe(smsc.port);
      expect(other.url).toBe(`smpp://other:pw@127.0.0.1:${other.port}`);
      const c = await Client.connect(other);
      clients.push(c);
      expect(await c.bind("other", "pw")).toBe(0);
      expect((await other.binds()).length).toBe(1);
      await eventually(async () => (await smsc.binds()).length === 0);
    } finally {
      await other.stop();
    }
  });
});
