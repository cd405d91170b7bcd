/**
 * One SMPP connection: our own socket and framing (pdu-framer.ts), the `smpp` package's codec
 * (codec.ts, read through pdu-reader.ts), and what the package lacks:
 *
 * - Framing is ours (docs/design.md "Carrier-grade SMPP"): the package stops reading for good
 *   after a PDU it cannot parse and caps PDUs at 16384 octets. Here a PDU whose body does not
 *   decode is handed on marked `malformed` (the owner answers it), and the connection is closed
 *   only when the stream cannot be framed: a `command_length` under 16 or over `maxPduBytes`, or
 *   a PDU begun and not finished within `readTimeoutMs` (the bytes stopped coming mid-way).
 * - Requests with a response timeout. The package keeps a response callback until its response
 *   comes, for ever (upstream farhadi/node-smpp#227 asks for a timeout, open). Here every request
 *   is settled: by its response (or a generic_nack of its sequence number), by `timeoutMs`, or by
 *   the connection closing.
 * - Sequence numbers are ours (1 to 0x7FFFFFFF), so a request is tracked before it is written.
 *
 * Incoming requests (enquire_link, unbind, deliver_sm...) go to `onRequest`; the owner answers
 * them with `respond`.
 */

import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";
import type { SmppPdu } from "smpp";
import smpp from "./codec.ts";
import { PduFramer, UnframeableStream } from "./pdu-framer.ts";
import { readPdu } from "./pdu-reader.ts";

export class RequestTimeout extends Error {
  constructor(command: string, ms: number) {
    super(`no ${command}_resp within ${ms} ms`);
    this.name = "RequestTimeout";
  }
}

/** The request was never written (the connection was closing or gone): it cannot have arrived. */
export class NotSent extends Error {
  constructor(command: string, why: string) {
    super(`${command} not sent: ${why}`);
    this.name = "NotSent";
  }
}

export class ConnectionLost extends Error {
  constructor(command: string, why: string) {
    super(`connection lost before the ${command}_resp (${why})`);
    this.name = "ConnectionLost";
  }
}

export interface Malformed {
  reason: string;
  bytes: Buffer;
}

interface Pending {
  command: string;
  resolve: (pdu: SmppPdu) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export interface SessionOptions {
  host: string;
  port: number;
  /** TLS (smpps://): true, or tls.connect options (ca, servername, rejectUnauthorized...). */
  tls: boolean | Record<string, unknown>;
  /** How long the TCP (and TLS) connection may take. */
  connectTimeoutMs: number;
  /** PDUs longer than this cannot be framed: the connection is closed (SMS_SMPP_MAX_PDU_BYTES). */
  maxPduBytes: number;
  /** A PDU begun and not whole after this long closes the connection (SMS_SMPP_READ_TIMEOUT_S). */
  readTimeoutMs: number;
  /**
   * An incoming request. `malformed`: its body did not decode; `pdu` then holds only its header,
   * `bytes` the whole PDU as it came.
   */
  onRequest: (pdu: SmppPdu, malformed?: Malformed) => void;
  /** Once, when the connection is gone (after an error, a close by either side, or `destroy`). */
  onClose: (why: string) => void;
}

export class SmppConnection {
  private readonly socket: Socket;
  private readonly framer: PduFramer;
  private readTimer: NodeJS.Timeout | undefined;
  private readonly pending = new Map<number, Pending>();
  private sequence = 0;
  private closed = false;
  /** Set once it is being closed (by us or after an error): nothing more is written. */
  private closing = false;
  private closeReason = "closed by the peer";

  private constructor(private readonly options: SessionOptions) {
    const tlsOptions = typeof options.tls === "object" ? options.tls : {};
    const target = { host: options.host, port: options.port };
    this.socket =
      options.tls === false ? connectTcp(target) : connectTls({ ...target, ...tlsOptions });
    // Small PDUs, many in flight: Nagle's algorithm would hold each one back for the peer's
    // delayed ACK (tens of ms on loopback).
    this.socket.setNoDelay(true);
    this.framer = new PduFramer(options.maxPduBytes);
    this.socket.on("data", (chunk: Buffer) => this.received(chunk));
    this.socket.on("error", (error: Error) => {
      this.closeReason = error.message;
      this.destroy(error.message);
    });
    this.socket.on("close", () => {
      this.closed = true;
      clearTimeout(this.readTimer);
      for (const [sequence, request] of this.pending) {
        clearTimeout(request.timer);
        this.pending.delete(sequence);
        request.reject(new ConnectionLost(request.command, this.closeReason));
      }
      options.onClose(this.closeReason);
    });
  }

  /** Connects; resolves once the connection (and its TLS handshake) is up, rejects otherwise. */
  static open(options: SessionOptions): Promise<SmppConnection> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const connection = new SmppConnection({
        ...options,
        onClose: (why) => {
          if (!settled) {
            settled = true;
            clearTimeout(timer);
            reject(new Error(`cannot connect to ${options.host}:${options.port}: ${why}`));
          } else options.onClose(why);
        },
      });
      const timer = setTimeout(
        () => connection.destroy(`no connection within ${options.connectTimeoutMs} ms`),
        options.connectTimeoutMs,
      );
      connection.socket.once(options.tls === false ? "connect" : "secureConnect", () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(connection);
      });
    });
  }

  private corked = false;

  /**
   * Connected, not being closed, and the socket still writable: requests can be written. A socket
   * the peer ended stops being writable before its close event runs; without that check a part
   * refused as unsent was offered to the same bind again at once, in a loop of promise callbacks
   * that never let the close event (or any timer) run.
   */
  get isOpen(): boolean {
    return !this.closed && !this.closing && this.socket.writable;
  }

  /** Sends a request; settles with its response (any command_status), a timeout or the connection's loss. */
  request(command: string, fields: Record<string, unknown>, timeoutMs: number): Promise<SmppPdu> {
    if (!this.isOpen) return Promise.reject(new NotSent(command, this.closeReason));
    this.sequence = this.sequence >= 0x7fffffff ? 1 : this.sequence + 1;
    const sequence = this.sequence;
    const pdu = new smpp.PDU(command, { ...fields, sequence_number: sequence });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(sequence);
        reject(new RequestTimeout(command, timeoutMs));
      }, timeoutMs);
      this.pending.set(sequence, { command, resolve, reject, timer });
      this.corkForThisTick();
      if (!this.write(pdu)) {
        clearTimeout(timer);
        this.pending.delete(sequence);
        reject(new NotSent(command, "socket not writable"));
      }
    });
  }

  /** Answers an incoming request; false when the connection is gone (the answer is lost). */
  respond(request: SmppPdu, commandStatus = 0, fields: Record<string, unknown> = {}): boolean {
    if (this.closed) return false;
    const response =
      commandStatus === 0
        ? request.response(fields)
        : request.response({ command_status: commandStatus });
    this.corkForThisTick();
    return this.write(response);
  }

  private write(pdu: SmppPdu): boolean {
    if (!this.socket.writable) return false;
    this.socket.write(pdu.toBuffer());
    return true;
  }

  /**
   * PDUs written in the same tick leave in one write: a window of submit_sm, or the answers to a
   * run of receipts, cost one system call instead of one each (the largest cost of the link in a
   * profile at a thousand parts a second).
   */
  private corkForThisTick(): void {
    if (this.corked) return;
    this.corked = true;
    const socket = this.socket;
    socket.cork();
    process.nextTick(() => {
      this.corked = false;
      socket.uncork();
    });
  }

  /** Requests in flight. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Ends the connection gracefully (FIN); it closes once the peer closes too. */
  end(): void {
    if (!this.isOpen) return;
    this.closing = true;
    this.socket.end();
  }

  destroy(why: string): void {
    if (this.closed) return;
    if (!this.closing || this.closeReason === "closed by the peer") this.closeReason = why;
    this.closing = true;
    this.socket.destroy();
  }

  /** Frames what came and hands on each PDU; a stream that cannot be framed ends the connection. */
  private received(chunk: Buffer): void {
    if (this.closed) return;
    let pdus: Buffer[];
    try {
      pdus = this.framer.push(chunk);
    } catch (error) {
      if (!(error instanceof UnframeableStream)) throw error;
      this.closeReason = error.message;
      this.destroy(error.message);
      return;
    }
    for (const bytes of pdus) {
      if (this.socket.destroyed) return;
      this.receive(bytes);
    }
    this.watchPartial();
  }

  /** While a PDU is begun and not whole, the rest must come within `readTimeoutMs` of the last byte. */
  private watchPartial(): void {
    if (this.framer.partial === 0) {
      clearTimeout(this.readTimer);
      this.readTimer = undefined;
      return;
    }
    if (this.readTimer) this.readTimer.refresh();
    else {
      this.readTimer = setTimeout(() => {
        if (this.framer.partial === 0) return;
        this.destroy(`a PDU stopped arriving mid-way for ${this.options.readTimeoutMs} ms`);
      }, this.options.readTimeoutMs);
      this.readTimer.unref();
    }
  }

  private receive(bytes: Buffer): void {
    const { pdu, malformed } = readPdu(bytes);
    if (pdu.isResponse()) {
      const request = this.pending.get(pdu.sequence_number);
      // Late (after its timeout), unsolicited, or not an answer to that request: nothing waits.
      if (!request || !answers(pdu, request.command)) return;
      clearTimeout(request.timer);
      this.pending.delete(pdu.sequence_number);
      request.resolve(pdu);
      return;
    }
    this.options.onRequest(pdu, malformed === undefined ? undefined : { reason: malformed, bytes });
  }
}

/** The response of `command`, or a generic_nack: an unknown response id never settles a request. */
function answers(pdu: SmppPdu, command: string): boolean {
  return pdu.command === `${command}_resp` || pdu.command === "generic_nack";
}
