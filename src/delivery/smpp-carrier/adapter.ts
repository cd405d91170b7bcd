/**
 * The SMPP 3.4 adapter of the carrier port (docs/design.md "Carrier: SMPP 3.4"): `SMS_SMPP_BINDS`
 * transceiver binds to one SMSC (bind.ts), parts encoded one `submit_sm` each (encoding.ts),
 * receipts parsed (receipts.ts, incoming.ts) and held until stored (receipt-inbox.ts).
 *
 * Limits: `window` = the window of every bind; `partsPerSecond` = the TPS of every bind. The
 * worker paces its claims by them; `submit` spreads the parts over the binds (the bind with the
 * most free window first) and keeps each bind within its window and token bucket.
 *
 * What `submit` answers for each part:
 * - accepted (`submit_sm_resp` status 0): the SMSC's `message_id`, exactly as written;
 * - refused with any status but the two below: `{ ok: false }` (the message becomes SEND_ERROR;
 *   ESME_RSYSERR is marked `carrierFault`: with several carriers it may go to the next one);
 * - ESME_RTHROTTLED / ESME_RMSGQFUL: submitted again, after the bind's backoff or on another bind;
 * - no answer (the connection was lost, or no `submit_sm_resp` within `responseTimeoutMs`, after
 *   which the bind is dropped and bound again): the outcome is unknown, so the part is submitted
 *   again on a bind that is up. It may reach the phone twice; it is never failed nor charged on a
 *   guess. A part without an answer `maxLostPerPart` + 1 times fails the whole call (below).
 * While no bind is up, `submit` waits for one up to `unboundWaitMs`; then it throws (the carrier
 * cannot be reached): the worker pauses and the claim's messages go back to their lanes, unfailed,
 * to be submitted when a bind is up again. Parts of that call the SMSC had already accepted are
 * then submitted again too: at most the call's parts, which the worker keeps within its window. The
 * error names them with their ids (`acceptedParts`): with several carriers the worker records the
 * messages accepted whole and keeps the others with this carrier (submission.ts).
 *
 * Receipts and mobile-originated messages (deliver_sm, data_sm): incoming.ts.
 */

import type { Logger } from "../../logger.ts";
import { type BindStatus, SmppBind, type SubmitAnswer } from "../../smpp/bind.ts";
import {
  ESME_RMSGQFUL,
  ESME_RTHROTTLED,
  ESME_RX_P_APPN,
  isCarrierFault,
  statusName,
} from "../../smpp/command-status.ts";
import { type Concatenation, submitSmFields } from "../../smpp/encoding.ts";
import { describeEndpoint } from "../../smpp/endpoint.ts";
import type {
  Carrier,
  CarrierLimits,
  CarrierPart,
  CarrierStatus,
  ReceiptHandler,
  ReceiptRules,
  SubmitOptions,
  SubmitResult,
} from "../carrier.ts";
import { MinuteCounts } from "../minute-counts.ts";
import type { MalformedPdu, SmppCarrierOptions } from "./carrier-options.ts";
import { IncomingPdus } from "./incoming.ts";
import { keepMalformedPdu } from "./malformed-pdus.ts";
import { ReceiptInbox } from "./receipt-inbox.ts";
import { type Call, CarrierUnavailable, type Job } from "./submit-calls.ts";

export class SmppCarrier implements Carrier {
  readonly name = "smpp";
  readonly limits: CarrierLimits;
  readonly receiptRules: ReceiptRules;
  private readonly binds: SmppBind[];
  private readonly queue: Job[] = [];
  private readonly calls = new Set<Call>();
  private readonly inbox: ReceiptInbox;
  private readonly incoming: IncomingPdus;
  private readonly concatenation: Concatenation;
  private readonly unboundWaitMs: number;
  private readonly maxLostPerPart: number;
  private readonly now: () => number;
  private readonly logger: Logger;
  private readonly endpointText: string;
  private running = false;
  private pumping = false;
  private pumpTimer: NodeJS.Timeout | undefined;
  private pumpAt = Number.POSITIVE_INFINITY;
  private rotation = 0;
  private readonly counts = {
    accepted: 0,
    refused: 0,
    throttled: 0,
    resubmitted: 0,
    malformedPdus: 0,
  };
  /** submit_sm written (answered or lost), refused and throttled: the console's last 15 minutes. */
  private readonly recent: MinuteCounts<"submitted" | "refused" | "throttled">;
  private readonly keepMalformed: ((pdu: MalformedPdu) => Promise<void>) | undefined;

  constructor(options: SmppCarrierOptions) {
    const binds = Math.max(1, options.binds ?? 1);
    const window = Math.max(1, options.window ?? 10);
    this.limits = { window: window * binds };
    if (options.tps !== undefined) this.limits.partsPerSecond = options.tps * binds;
    this.concatenation = options.concatenation ?? "sar";
    this.receiptRules = {
      ids: options.receiptIds ?? "auto",
      multipart: options.multipartReceipts ?? "any",
    };
    this.unboundWaitMs = options.unboundWaitMs ?? 10_000;
    this.maxLostPerPart = options.maxLostPerPart ?? 3;
    this.now = options.now ?? Date.now;
    this.recent = new MinuteCounts(["submitted", "refused", "throttled"], 15, this.now);
    this.logger = options.logger;
    this.endpointText = describeEndpoint(options.endpoint);
    this.keepMalformed = options.keepMalformed;
    this.inbox = new ReceiptInbox({
      logger: options.logger,
      holdUnknownMs: options.holdUnknownReceiptsMs ?? this.unboundWaitMs + 10_000,
      batchSize: 500,
      collectMs: options.receiptCollectMs ?? 50,
    });
    this.incoming = new IncomingPdus({
      receipts: this.inbox,
      inbound: options.inbound,
      carrier: this.endpointText,
      moCollectMs: options.moCollectMs ?? 5,
      national: options.national,
      logger: options.logger,
    });
    const { endpoint } = options;
    this.binds = Array.from(
      { length: binds },
      (_, i) =>
        new SmppBind(
          i + 1,
          {
            host: endpoint.host,
            port: endpoint.port,
            tls: endpoint.tls ? (options.tlsOptions ?? true) : false,
            systemId: endpoint.systemId,
            password: endpoint.password,
            systemType: options.systemType ?? "",
            window,
            tps: options.tps,
            enquireLinkMs: options.enquireLinkMs ?? 30_000,
            responseTimeoutMs: options.responseTimeoutMs ?? 10_000,
            connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
            backoffInitialMs: options.backoffInitialMs ?? 1_000,
            backoffMaxMs: options.backoffMaxMs ?? 30_000,
            maxPduBytes: options.maxPduBytes ?? 70_000,
            readTimeoutMs: options.readTimeoutMs ?? 30_000,
          },
          {
            changed: () => this.bindsChanged(),
            incoming: (pdu, respond) => this.incoming.receive(pdu, respond),
            malformed: (pdu, malformed, respond) => {
              this.counts.malformedPdus++;
              void keepMalformedPdu(this.keepMalformed, this.logger, {
                carrier: this.endpointText,
                command: pdu.command,
                sequence: pdu.sequence_number,
                reason: malformed.reason,
                bytes: malformed.bytes,
                at: new Date(),
              }).finally(() => respond(ESME_RX_P_APPN));
            },
          },
          options.logger,
        ),
    );
  }

  async start(onReceipts: ReceiptHandler): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.inbox.start(onReceipts);
    this.incoming.start();
    this.logger.info(
      { smsc: this.endpointText, binds: this.binds.length, ...this.limits },
      "smpp: starting",
    );
    for (const bind of this.binds) bind.start();
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    clearTimeout(this.pumpTimer);
    for (const call of [...this.calls]) this.fail(call, new CarrierUnavailable("carrier stopped"));
    await this.inbox.stop();
    await this.incoming.stop();
    await Promise.all(this.binds.map((bind) => bind.stop()));
  }

  submit(parts: readonly CarrierPart[], options?: SubmitOptions): Promise<SubmitResult[]> {
    if (!this.running) return Promise.reject(new CarrierUnavailable("SMPP carrier not started"));
    if (parts.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const results: SubmitResult[] = new Array(parts.length);
      const call: Call = {
        results,
        remaining: parts.length,
        settled: false,
        accepted: 0,
        resolve: () => resolve(results),
        reject,
      };
      if (options?.mayWrite) {
        call.mayWrite = options.mayWrite;
        call.started = new Set();
      }
      this.calls.add(call);
      parts.forEach((part, i) => {
        this.queue.push({
          part,
          call,
          lost: 0,
          settle: (result) => {
            if (call.settled) return;
            results[i] = result;
            if (result.ok) call.accepted++;
            if (--call.remaining === 0) this.finish(call);
          },
        });
      });
      this.pump();
      this.watchUnbound();
    });
  }

  status(): CarrierStatus {
    const binds: BindStatus[] = this.binds.map((bind) => bind.status());
    const bound = binds.filter((b) => b.state === "bound").length;
    return {
      state: bound === binds.length ? "bound" : bound > 0 ? "partly bound" : "unbound",
      smsc: this.endpointText,
      window: { size: this.limits.window, inUse: binds.reduce((sum, b) => sum + b.windowInUse, 0) },
      partsPerSecond: this.limits.partsPerSecond ?? null,
      queued: this.queue.length,
      receipts: this.inbox.stats(),
      ...this.counts,
      last15Minutes: this.recent.sums(),
      mo: this.incoming.mo,
      binds,
    };
  }

  /** Sends queued parts on the binds that can take them now; wakes itself for a bucket or a backoff. */
  private pump(): void {
    if (this.pumping || !this.running) return;
    this.pumping = true;
    try {
      let wait = Number.POSITIVE_INFINITY;
      while (this.queue.length > 0) {
        const now = performance.now();
        let best: SmppBind | undefined;
        const n = this.binds.length;
        for (let k = 0; k < n; k++) {
          const bind = this.binds[(this.rotation + k) % n] as SmppBind;
          const ready = bind.readiness(now);
          if (ready === undefined) continue;
          if (ready > 0) wait = Math.min(wait, ready);
          else if (!best || bind.free > best.free) best = bind;
        }
        if (!best) break;
        const job = this.queue.shift() as Job;
        if (!this.mayWrite(job)) continue;
        this.rotation = (this.rotation + 1) % n;
        this.send(job, best);
      }
      if (this.queue.length > 0 && wait < Number.POSITIVE_INFINITY) this.wakeIn(wait);
    } finally {
      this.pumping = false;
    }
  }

  /**
   * The last moment a part can be stopped (docs/design.md "Carrier-grade SMPP": a STOP waits only
   * for what is not yet written): a message whose first part is about to be written is asked
   * about once; held back, its parts are answered `heldBack`, unwritten.
   */
  private mayWrite(job: Job): boolean {
    const { call, part } = job;
    if (!call.mayWrite || !call.started || call.started.has(part.messageId)) return true;
    if (call.mayWrite(part)) {
      call.started.add(part.messageId);
      return true;
    }
    job.settle({ ok: false, error: "held back: the recipient sent STOP", heldBack: true });
    return false;
  }

  private wakeIn(ms: number): void {
    const at = performance.now() + ms;
    if (this.pumpTimer && at >= this.pumpAt) return;
    clearTimeout(this.pumpTimer);
    this.pumpAt = at;
    this.pumpTimer = setTimeout(
      () => {
        this.pumpTimer = undefined;
        this.pumpAt = Number.POSITIVE_INFINITY;
        this.pump();
      },
      Math.max(1, ms),
    );
  }

  private send(job: Job, bind: SmppBind): void {
    const fields = submitSmFields(job.part, {
      now: this.now(),
      concatenation: this.concatenation,
    });
    void bind.submit(fields).then((answer) => this.answered(job, bind, answer));
  }

  private answered(job: Job, bind: SmppBind, answer: SubmitAnswer): void {
    const { part } = job;
    const where = { bind: bind.index, messageId: part.messageId, partIndex: part.partIndex };
    if (answer.kind !== "unsent") this.recent.add("submitted");
    if (answer.kind === "unsent") {
      // Never written: the SMSC cannot have it. Sent when a bind can take it.
      if (!job.call.settled) this.queue.unshift(job);
    } else if (answer.kind === "lost") {
      job.lost++;
      this.counts.resubmitted++;
      if (job.lost > this.maxLostPerPart) {
        this.fail(
          job.call,
          new CarrierUnavailable(`no answer to submit_sm ${job.lost} times: ${answer.error}`),
        );
      } else if (!job.call.settled) {
        this.logger.warn(
          { ...where, err: answer.error },
          "smpp: submit_sm outcome unknown; submitting the part again",
        );
        this.queue.unshift(job);
      }
    } else if (answer.status === 0) {
      this.counts.accepted++;
      let carrierId = answer.messageId;
      if (carrierId === "") {
        carrierId = `smpp-no-id-${part.messageId}-${part.partIndex}-${Date.now()}`;
        this.logger.warn(where, "smpp: submit_sm_resp without a message_id: no receipt can match");
      }
      this.incoming.hint(carrierId, part.messageId);
      job.settle({ ok: true, carrierId });
    } else if (answer.status === ESME_RTHROTTLED || answer.status === ESME_RMSGQFUL) {
      this.counts.throttled++;
      this.recent.add("throttled");
      if (!job.call.settled) this.queue.unshift(job);
    } else {
      this.counts.refused++;
      this.recent.add("refused");
      const error = `submit_sm refused: ${statusName(answer.status)}`;
      this.logger.info({ ...where, status: answer.status }, `smpp: ${error}`);
      job.settle(
        isCarrierFault(answer.status)
          ? { ok: false, error, carrierFault: true }
          : { ok: false, error },
      );
    }
    this.pump();
    this.watchUnbound();
  }

  private finish(call: Call): void {
    call.settled = true;
    clearTimeout(call.unboundTimer);
    this.calls.delete(call);
    call.resolve();
  }

  /** Fails a call as a whole: its queued parts are dropped; answers still to come are ignored. */
  private fail(call: Call, error: CarrierUnavailable): void {
    if (call.settled) return;
    call.settled = true;
    clearTimeout(call.unboundTimer);
    this.calls.delete(call);
    for (let i = this.queue.length - 1; i >= 0; i--)
      if (this.queue[i]?.call === call) this.queue.splice(i, 1);
    if (call.accepted > 0) {
      const accepted = new Map<number, string>();
      call.results.forEach((result, i) => {
        if (result?.ok) accepted.set(i, result.carrierId);
      });
      error.acceptedParts = accepted;
      this.logger.warn(
        { accepted: call.accepted, err: error.message },
        "smpp: submission given back to the worker with the parts the SMSC accepted",
      );
    }
    call.reject(error);
  }

  private bindsChanged(): void {
    this.pump();
    this.watchUnbound();
  }

  /** While no bind is up, each call waiting for one fails after `unboundWaitMs`. */
  private watchUnbound(): void {
    const up = this.binds.some((bind) => bind.state === "bound");
    for (const call of this.calls) {
      if (up) {
        clearTimeout(call.unboundTimer);
        call.unboundTimer = undefined;
      } else if (!call.unboundTimer) {
        call.unboundTimer = setTimeout(
          () =>
            this.fail(call, new CarrierUnavailable(`no SMPP bind up for ${this.unboundWaitMs} ms`)),
          this.unboundWaitMs,
        );
      }
    }
  }
}
