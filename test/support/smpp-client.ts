/**
 * A minimal SMPP client on the npm `smpp` package (it ships no types), to drive the test SMSC
 * (test/smsc) as a bare ESME would: bind, submit_sm, and deliver_sm answered or left unanswered.
 */
import type { EventEmitter } from "node:events";
import { createRequire } from "node:module";
import { expect } from "vitest";
import type { TestSmsc } from "./smsc.ts";

export interface SmppPdu {
  command: string;
  command_status: number;
  sequence_number: number;
  message_id?: string;
  esm_class?: number;
  source_addr?: string;
  destination_addr?: string;
  data_coding?: number;
  short_message?: { message?: string | Buffer };
  receipted_message_id?: string;
  message_state?: number;
  response(options?: Record<string, unknown>): SmppPdu;
}

export interface SmppSession extends EventEmitter {
  bind_transceiver(options: Record<string, unknown>, callback: (pdu: SmppPdu) => void): void;
  submit_sm(options: Record<string, unknown>, callback: (pdu: SmppPdu) => void): void;
  send(pdu: SmppPdu): boolean;
  close(callback?: () => void): void;
  destroy(callback?: () => void): void;
}

const smpp = createRequire(import.meta.url)("smpp") as {
  connect(options: { host: string; port: number }): SmppSession;
};

export const ESME_RBINDFAIL = 0x0d;
export const ESME_RMSGQFUL = 0x14;
export const ESME_RSUBMITFAIL = 0x45;
export const ESME_RTHROTTLED = 0x58;

export class Client {
  readonly delivered: SmppPdu[] = [];
  /** Answer deliver_sm with status 0 (else the SMSC keeps resending receipts). */
  ack = true;
  closed = false;

  private constructor(readonly session: SmppSession) {
    session.on("deliver_sm", (pdu: SmppPdu) => {
      this.delivered.push(pdu);
      if (this.ack) session.send(pdu.response());
    });
    session.on("enquire_link", (pdu: SmppPdu) => session.send(pdu.response()));
    session.on("unbind", (pdu: SmppPdu) => {
      session.send(pdu.response());
      session.close();
    });
    session.on("error", () => {}); // the SMSC being killed is part of the tests
    session.on("close", () => {
      this.closed = true;
    });
  }

  static async connect(smsc: TestSmsc): Promise<Client> {
    const session = smpp.connect({ host: "127.0.0.1", port: smsc.port });
    await new Promise<void>((resolve, reject) => {
      session.once("connect", () => resolve());
      session.once("error", reject);
    });
    return new Client(session);
  }

  static async bound(smsc: TestSmsc): Promise<Client> {
    const client = await Client.connect(smsc);
    expect(await client.bind(smsc.systemId, smsc.password)).toBe(0);
    return client;
  }

  bind(systemId: string, password: string): Promise<number> {
    return new Promise((resolve) =>
      this.session.bind_transceiver({ system_id: systemId, password }, (pdu) =>
        resolve(pdu.command_status),
      ),
    );
  }

  submit(to: string, text = "hello", extra: Record<string, unknown> = {}): Promise<SmppPdu> {
    return new Promise((resolve) =>
      this.session.submit_sm(
        {
          source_addr_ton: 5,
          source_addr_npi: 0,
          source_addr: "Acme",
          dest_addr_ton: 1,
          dest_addr_npi: 1,
          destination_addr: to,
          registered_delivery: 1,
          data_coding: 3,
          short_message: Buffer.from(text, "latin1"),
          ...extra,
        },
        resolve,
      ),
    );
  }

  receiptFor(messageId: string): SmppPdu | undefined {
    return this.delivered.find((pdu) => pdu.receipted_message_id === messageId);
  }

  close(): void {
    if (!this.closed) this.session.destroy();
  }
}

export function text(pdu: SmppPdu): string {
  const message = pdu.short_message?.message;
  return Buffer.isBuffer(message) ? message.toString("latin1") : String(message);
}
