/**
 * One SMPP connection on the `smpp` package's codec and framing, with what the package lacks:
 *
 * - Requests with a response timeout. The package keeps a response callback until its response
 *   comes, for ever: an answer that never comes, or a connection that closes first, never calls
 *   it back (upstream farhadi/node-smpp#227 asks for a timeout, open). Here every request is
 *   settled: by its response (or a generic_nack of its sequence number), by `timeoutMs`, or by
 *   the connection closing.
 * - A connection that fails is destroyed: after a PDU it cannot parse the package emits `error`
 *   and stops reading for good (`_busy` stays set in `_extractPDUs`), so the connection is useless.
 * - Sequence numbers are ours (1 to 0x7FFFFFFF), so a request is tracked before it is written.
 *
 * Incoming requests (enquire_link, unbind, deliver_sm...) go to `onRequest`; the owner answers
 * them with `respond`.
 */

import type { SmppPdu, SmppSession } from "smpp";
import smpp from "./codec.ts";

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
  onRequest: (pdu: SmppPdu) => void;
  /** Once, when the connection is gone (after an error, a close by either side, or `destroy`). */
  onClose: (why: string) => void;
}

export class SmppConnection {
  private readonly session: SmppSession;
  private readonly pending = new Map<number, Pending>();
  private sequence = 0;
  private closed = false;
  /** Set once it is being closed (by us or after an error): nothing more is written. */
  private closing = false;
  private closeReason = "closed by the peer";

  private constructor(options: SessionOptions) {
    const tlsOptions = typeof options.tls === "object" ? options.tls : {};
    this.session = smpp.connect({
      host: options.host,
      port: options.port,
      ...(options.tls !== false && { tls: true, ...tlsOptions }),
    });
    // Small PDUs, many in flight: Nagle's algorithm would hold each one back for the peer's
    // delayed ACK (tens of ms on loopback).
    this.session.socket.setNoDelay(true);
    this.session.on("pdu", (pdu: SmppPdu) => this.receive(pdu, options.onRequest));
    this.session.on("error", (error: Error) => {
      this.closeReason = error.message;
      this.destroy(error.message);
    });
    this.session.on("close", () => {
      this.closed = true;
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
      connection.session.once(options.tls === false ? "connect" : "secureConnect", () => {
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
    return !this.closed && !this.closing && this.session.socket.writable;
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
      if (!this.session.send(pdu)) {
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
    return this.session.send(response);
  }

  /**
   * PDUs written in the same tick leave in one write: a window of submit_sm, or the answers to a
   * run of receipts, cost one system call instead of one each (the largest cost of the link in a
   * profile at a thousand parts a second).
   */
  private corkForThisTick(): void {
    if (this.corked) return;
    this.corked = true;
    const socket = this.session.socket;
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
    this.session.close();
  }

  destroy(why: string): void {
    if (this.closed) return;
    if (!this.closing || this.closeReason === "closed by the peer") this.closeReason = why;
    this.closing = true;
    this.session.destroy();
  }

  private receive(pdu: SmppPdu, onRequest: (pdu: SmppPdu) => void): void {
    if (pdu.isResponse()) {
      const request = this.pending.get(pdu.sequence_number);
      if (!request) return; // late (after its timeout) or unsolicited: nothing waits for it
      clearTimeout(request.timer);
      this.pending.delete(pdu.sequence_number);
      request.resolve(pdu);
      return;
    }
    onRequest(pdu);
  }
}
