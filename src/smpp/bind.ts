/**
 * One transceiver bind to the SMSC (docs/design.md "Carrier: SMPP 3.4"): its connection, its window of
 * unacknowledged `submit_sm`, its token bucket (`submit_sm` per second), keep-alive and rebinding.
 *
 * - Binding: `bind_transceiver` (interface 3.4, `system_type`); a refusal is logged and retried.
 * - Rebinding: after any disconnect (the SMSC closed, unbound, a timeout, a refused bind) it binds
 *   again after a backoff of 1 s doubling to 30 s, back to 1 s once bound.
 * - Keep-alive: its own `enquire_link` every `enquireLinkMs`; an `enquire_link` or `unbind` from
 *   the SMSC is answered (an `unbind`, then the connection closes and the bind starts again).
 * - A request without its response within `responseTimeoutMs` (submit_sm, enquire_link, bind)
 *   means the bind is broken: the connection is dropped and bound again. The submissions it carried
 *   have an unknown outcome (`lost`): the adapter submits them again (adapter.ts).
 * - TPS: a token bucket at the rate (a small burst for late timers) and at most `tps` submit_sm in
 *   any second, as SMSCs count it (the bucket alone let its capacity more through).
 * - ESME_RTHROTTLED (0x58) and ESME_RMSGQFUL (0x14) pause the bind (throttle-backoff.ts): one pause
 *   per episode, not per answer (the answers to parts already in flight when it began add nothing);
 *   an episode after a pause doubles it, up to 1 s; an acceptance starts over. The first pause
 *   after ESME_RTHROTTLED is what the bind's TPS implies (1 / tps, at most 100 ms), else 100 ms.
 *
 * The adapter decides which bind takes a part (`readiness`) and what to do with each answer.
 */
import type { SmppPdu } from "smpp";
import type { Logger } from "../logger.ts";
import { SlidingLimit, TokenBucket } from "../scheduling/throttle.ts";
import { ESME_RINVCMDID, ESME_RMSGQFUL, ESME_ROK, ESME_RTHROTTLED } from "./command-status.ts";
import { type Malformed, NotSent, RequestTimeout, SmppConnection } from "./session.ts";
import { ThrottleBackoff } from "./throttle-backoff.ts";

export type BindState = "connecting" | "binding" | "bound" | "unbinding" | "waiting" | "stopped";

export interface BindSettings {
  host: string;
  port: number;
  tls: boolean | Record<string, unknown>;
  systemId: string;
  password: string;
  systemType: string;
  /** Unacknowledged submit_sm at most. */
  window: number;
  /** submit_sm per second; undefined: no limit. */
  tps: number | undefined;
  enquireLinkMs: number;
  responseTimeoutMs: number;
  connectTimeoutMs: number;
  backoffInitialMs: number;
  backoffMaxMs: number;
  /** Longer PDUs cannot be framed: the connection is closed and bound again. */
  maxPduBytes: number;
  /** A PDU begun and not whole after this long closes the connection. */
  readTimeoutMs: number;
}

export interface BindEvents {
  /** The bind came up or went down: the adapter dispatches again. */
  changed(): void;
  /**
   * A deliver_sm or data_sm arrived; `respond` answers it on the connection it came on (false:
   * that one is gone).
   */
  incoming(pdu: SmppPdu, respond: (status?: number) => boolean): void;
  /**
   * A deliver_sm or data_sm whose body does not decode (`pdu` holds its header): the owner keeps
   * its bytes and answers it with `respond`.
   */
  malformed(pdu: SmppPdu, malformed: Malformed, respond: (status: number) => boolean): void;
}

/**
 * What became of one submit_sm: the SMSC's answer; an unknown outcome (sent, no answer); or not
 * sent at all (the connection was going away), which the SMSC cannot have seen.
 */
export type SubmitAnswer =
  | { kind: "answered"; status: number; messageId: string }
  | { kind: "lost"; error: string }
  | { kind: "unsent"; error: string };

export interface BindStatus {
  bind: number;
  state: BindState;
  window: number;
  windowInUse: number;
  tps: number | null;
  boundSince?: string;
  /** Slowed down by the SMSC's throttling until then. */
  throttledUntil?: string;
  lastError?: string;
  submitted: number;
  /** Throttling answers (ESME_RTHROTTLED, ESME_RMSGQFUL). */
  throttled: number;
  /** Pauses they began (one per episode), and the last one's length. */
  throttlePauses: number;
  lastThrottlePauseMs: number;
  lost: number;
  rebinds: number;
}

/** The first pause after ESME_RMSGQFUL, or ESME_RTHROTTLED without a TPS; and the longest. */
const THROTTLE_PAUSE_MS = 100;
const THROTTLE_PAUSE_MAX_MS = 1_000;

export class SmppBind {
  private stateValue: BindState = "waiting";
  private connection: SmppConnection | undefined;
  private inFlight = 0;
  private readonly bucket: TokenBucket | undefined;
  private readonly perSecond: SlidingLimit | undefined;
  private readonly throttling = new ThrottleBackoff(THROTTLE_PAUSE_MAX_MS);
  private backoffMs: number;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private enquireTimer: NodeJS.Timeout | undefined;
  private boundAt: Date | undefined;
  private lastError: string | undefined;
  private readonly counts = { submitted: 0, throttled: 0, lost: 0, rebinds: 0 };
  private readonly log: Record<string, unknown>;
  /** Called once the connection is gone (stop waits for it). */
  private onGone: (() => void) | undefined;

  constructor(
    readonly index: number,
    private readonly settings: BindSettings,
    private readonly events: BindEvents,
    private readonly logger: Logger,
  ) {
    this.backoffMs = settings.backoffInitialMs;
    if (settings.tps !== undefined) {
      // 50 ms of throughput saved up at most (timers fire late on a busy machine), at least 2.
      this.bucket = new TokenBucket(settings.tps, Math.max(2, Math.ceil(settings.tps / 20)));
      this.perSecond = new SlidingLimit(Math.max(1, Math.ceil(settings.tps)));
    }
    this.log = {
      bind: index,
      host: settings.host,
      port: settings.port,
      systemId: settings.systemId,
      tls: settings.tls !== false,
    };
  }

  get state(): BindState {
    return this.stateValue;
  }

  get windowInUse(): number {
    return this.inFlight;
  }

  start(): void {
    if (this.stateValue === "waiting" && !this.reconnectTimer) this.connect();
  }

  /** Unbinds (waiting briefly for the answer) and closes; no rebinding after this. */
  async stop(): Promise<void> {
    const wasBound = this.stateValue === "bound";
    this.setState("stopped");
    clearTimeout(this.reconnectTimer);
    clearInterval(this.enquireTimer);
    const connection = this.connection;
    if (!connection) return;
    if (wasBound) await connection.request("unbind", {}, 2_000).catch(() => undefined);
    await new Promise<void>((resolve) => {
      if (!connection.isOpen) return resolve();
      const timer = setTimeout(() => connection.destroy("stopped"), 1_000);
      this.onGone = () => {
        clearTimeout(timer);
        resolve();
      };
      connection.end();
    });
    this.logger.info(this.log, "smpp: unbound");
  }

  /**
   * Milliseconds until the bind can take a part (0: now), or undefined when it cannot until
   * something changes (not bound, or its window is full).
   */
  readiness(now: number): number | undefined {
    if (this.stateValue !== "bound" || !this.connection?.isOpen) return undefined;
    if (this.inFlight >= this.settings.window) return undefined;
    const paused = Math.max(0, Math.ceil(this.throttling.pausedUntil - now));
    return Math.max(
      paused,
      this.bucket ? this.bucket.msUntil(1) : 0,
      this.perSecond ? this.perSecond.msUntilFree() : 0,
    );
  }

  get free(): number {
    return this.settings.window - this.inFlight;
  }

  /** Sends one submit_sm (the caller checked `readiness` is 0) and settles with what became of it. */
  async submit(fields: Record<string, unknown>): Promise<SubmitAnswer> {
    const connection = this.connection;
    if (!connection?.isOpen || this.stateValue !== "bound")
      return { kind: "unsent", error: "not bound" };
    this.inFlight++;
    this.bucket?.take(1);
    this.perSecond?.record();
    this.counts.submitted++;
    const sentAt = performance.now();
    try {
      const response = await connection.request(
        "submit_sm",
        fields,
        this.settings.responseTimeoutMs,
      );
      const status = response.command_status;
      if (status === ESME_RTHROTTLED || status === ESME_RMSGQFUL) this.slowDown(status, sentAt);
      else if (status === ESME_ROK) this.throttling.accepted(sentAt);
      return { kind: "answered", status, messageId: response.message_id ?? "" };
    } catch (error) {
      if (error instanceof NotSent) return { kind: "unsent", error: error.message };
      this.counts.lost++;
      if (error instanceof RequestTimeout) this.broken(connection, error.message);
      return { kind: "lost", error: (error as Error).message };
    } finally {
      this.inFlight--;
    }
  }

  status(): BindStatus {
    const status: BindStatus = {
      bind: this.index,
      state: this.stateValue,
      window: this.settings.window,
      windowInUse: this.inFlight,
      tps: this.settings.tps ?? null,
      ...this.counts,
      throttlePauses: this.throttling.pauses,
      lastThrottlePauseMs: this.throttling.lastPauseMs,
    };
    if (this.boundAt && this.stateValue === "bound") status.boundSince = this.boundAt.toISOString();
    const pausedUntil = this.throttling.pausedUntil;
    if (pausedUntil > performance.now()) {
      status.throttledUntil = new Date(Date.now() + pausedUntil - performance.now()).toISOString();
    }
    if (this.lastError) status.lastError = this.lastError;
    return status;
  }

  private slowDown(status: number, sentAt: number): void {
    this.counts.throttled++;
    const tps = this.settings.tps;
    // Over its rate the SMSC takes the next part about 1 / tps later; a full queue has no rate.
    const base =
      status === ESME_RTHROTTLED && tps
        ? Math.min(THROTTLE_PAUSE_MS, Math.max(1, 1_000 / tps))
        : THROTTLE_PAUSE_MS;
    const pauseMs = this.throttling.throttled(sentAt, base);
    const message =
      status === ESME_RTHROTTLED ? "smpp: throttled by the SMSC" : "smpp: the SMSC's queue is full";
    const details = { ...this.log, status: `0x${status.toString(16)}`, pauseMs };
    // A warning for the first pause of a run, not for each of a throttled minute's.
    if (pauseMs > 0 && this.throttling.inARow === 1)
      this.logger.warn(details, `${message}; pausing the bind`);
    else this.logger.debug(details, message);
  }

  private connect(): void {
    if (this.stateValue === "stopped") return;
    this.reconnectTimer = undefined;
    this.setState("connecting");
    let connection: SmppConnection | undefined;
    SmppConnection.open({
      host: this.settings.host,
      port: this.settings.port,
      tls: this.settings.tls,
      connectTimeoutMs: this.settings.connectTimeoutMs,
      maxPduBytes: this.settings.maxPduBytes,
      readTimeoutMs: this.settings.readTimeoutMs,
      onRequest: (pdu, malformed) => {
        if (connection) this.onRequest(connection, pdu, malformed);
      },
      onClose: (why) => {
        if (connection) this.onClosed(connection, why);
      },
    }).then(
      (opened) => {
        connection = opened;
        if (this.stateValue === "stopped") return opened.destroy("stopped");
        this.connection = opened;
        void this.bind(opened);
      },
      (error: Error) => {
        this.lastError = error.message;
        this.logger.warn({ ...this.log, err: error.message }, "smpp: cannot connect");
        this.scheduleReconnect();
      },
    );
  }

  private async bind(connection: SmppConnection): Promise<void> {
    this.setState("binding");
    let response: SmppPdu;
    try {
      response = await connection.request(
        "bind_transceiver",
        {
          system_id: this.settings.systemId,
          password: this.settings.password,
          system_type: this.settings.systemType,
          interface_version: 0x34,
        },
        this.settings.responseTimeoutMs,
      );
    } catch (error) {
      return this.broken(connection, (error as Error).message);
    }
    if (response.command_status !== ESME_ROK) {
      this.lastError = `bind_transceiver refused: status 0x${response.command_status.toString(16)}`;
      this.logger.error(
        { ...this.log, status: response.command_status },
        `smpp: ${this.lastError}`,
      );
      return connection.destroy(this.lastError);
    }
    if (this.stateValue === "stopped") return;
    this.counts.rebinds += this.boundAt ? 1 : 0;
    this.boundAt = new Date();
    this.backoffMs = this.settings.backoffInitialMs;
    this.throttling.reset();
    this.setState("bound");
    this.logger.info(
      {
        ...this.log,
        smsc: response.system_id,
        window: this.settings.window,
        tps: this.settings.tps,
      },
      "smpp: bound (transceiver)",
    );
    this.enquireTimer = setInterval(() => {
      if (this.stateValue !== "bound") return;
      connection
        .request("enquire_link", {}, this.settings.responseTimeoutMs)
        .catch((error: Error) => {
          if (error instanceof RequestTimeout) this.broken(connection, error.message);
        });
    }, this.settings.enquireLinkMs);
    this.enquireTimer.unref();
  }

  private onRequest(connection: SmppConnection, pdu: SmppPdu, malformed?: Malformed): void {
    switch (pdu.command) {
      case "enquire_link":
        connection.respond(pdu);
        return;
      case "unbind":
        connection.respond(pdu);
        if (this.stateValue === "stopped") return;
        this.setState("unbinding");
        this.logger.warn(this.log, "smpp: the SMSC unbound; binding again");
        connection.end();
        setTimeout(() => connection.destroy("unbound by the SMSC"), 2_000).unref();
        return;
      case "deliver_sm":
      case "data_sm":
        if (malformed) {
          this.logger.warn(
            {
              ...this.log,
              command: pdu.command,
              sequence: pdu.sequence_number,
              why: malformed.reason,
            },
            "smpp: a PDU whose body does not decode",
          );
          this.events.malformed(pdu, malformed, (status) => connection.respond(pdu, status));
        } else this.events.incoming(pdu, (status = ESME_ROK) => connection.respond(pdu, status));
        return;
      case "alert_notification":
        return; // no response exists
      default:
        try {
          // "unknown" gets a generic_nack; any other request its _resp, both ESME_RINVCMDID.
          connection.respond(pdu, pdu.command === "unknown" ? 0 : ESME_RINVCMDID);
        } catch {
          // a request without a response PDU (outbind): nothing to answer
        }
    }
  }

  /** A request went unanswered: the bind is broken; it is dropped and bound again. */
  private broken(connection: SmppConnection, why: string): void {
    if (!connection.isOpen) return;
    this.lastError = why;
    this.logger.warn({ ...this.log, err: why }, "smpp: bind broken; binding again");
    connection.destroy(why);
  }

  private onClosed(connection: SmppConnection, why: string): void {
    if (connection !== this.connection) return;
    this.connection = undefined;
    clearInterval(this.enquireTimer);
    const gone = this.onGone;
    this.onGone = undefined;
    gone?.();
    if (this.stateValue === "stopped") return;
    this.lastError = why;
    this.logger.warn({ ...this.log, err: why, inFlight: this.inFlight }, "smpp: disconnected");
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stateValue === "stopped") return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.settings.backoffMaxMs, this.backoffMs * 2);
    this.setState("waiting");
    this.logger.info({ ...this.log, inMs: delay }, "smpp: binding again after a backoff");
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
    this.reconnectTimer.unref();
  }

  private setState(state: BindState): void {
    if (this.stateValue === state) return;
    this.stateValue = state;
    this.events.changed();
  }
}
