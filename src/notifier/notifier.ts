/**
 * The status-webhook dispatcher (design "Status webhooks").
 *
 * - Due work: a message whose first pending notification is due (`notifyAt`). Only the first
 *   pending notification of a message is ever sent, so notifications go out in order, each after
 *   the previous one succeeded or was given up.
 * - Wake-ups: a change stream on `messages` wakes the dispatcher at once; a periodic sweep catches
 *   retries and anything the stream missed. The stream's resume token is stored in `state`
 *   (`notifier.resumeToken`) and used on restart; a failing stream is reopened (and a token that
 *   cannot be resumed from is dropped after a second failure).
 * - Claims: in chunks, atomically (`claimDueNotifications`), so several instances send each
 *   notification once in the normal case. Outcomes are buffered and written with one bulkWrite per
 *   flush, while the next requests are already running.
 * - Sending: `GET <url>?id=<id>&status=<STATUS>[&batch_id=<id>]` (appended to the URL's own
 *   query), Standard Webhooks signature headers, keep-alive agents, a per-request timeout, a global
 *   cap on requests in flight, and a smaller cap for a host that answers slowly (its extra work goes
 *   back to the queue for a moment) so that a slow receiver cannot take every slot.
 * - Outcomes: any 2xx is delivered; anything else is retried on the schedule, then given up. No
 *   status URL: skipped. A refused (private) address or an unusable URL is given up at once.
 */

import http from "node:http";
import https from "node:https";
import type { ChangeStream, ChangeStreamOptions, Document } from "mongodb";
import { WakeSignal } from "../delivery/wake-signal.ts";
import type { Logger } from "../delivery/worker.ts";
import { BatchCommits } from "../store/batch-commits.ts";
import type { Store } from "../store/database.ts";
import type { AccountDoc, StatusName, WebhookAttemptDoc } from "../store/documents.ts";
import {
  loadResumeToken,
  type NotificationOutcome,
  RESUME_TOKEN_KEY,
  recordNotificationOutcomes,
  saveResumeToken,
} from "../store/notification-queue.ts";
import { AddressBlockedError, checkCallbackUrl, guardedLookup } from "./address-guard.ts";
import { claimDueNotifications, loadWebhookAccounts, type NotifyingMessage } from "./claiming.ts";
import { DEFAULT_RETRY_SCHEDULE_MS, retryDelayMs } from "./retry-schedule.ts";
import { webhookHeaders } from "./signature.ts";

export interface NotifierOptions {
  store: Store;
  logger: Logger;
  /** Distinguishes this instance's claims from other instances'. */
  instanceId: string;
  /** Delays before each retry, in ms (see retry-schedule.ts). Default: the Standard Webhooks-like one. */
  retrySchedule?: readonly number[];
  /** Per-request timeout (until the whole response is read). Default 5000. */
  timeoutMs?: number;
  /** Requests in flight at most, over all receivers. Default 64. */
  concurrency?: number;
  /** Requests in flight at most to a host that answers slowly. Default a quarter of `concurrency`. */
  perHostConcurrency?: number;
  /** A host is slow when its answers take this long (moving average, or one still waiting). Default min(2000, timeoutMs / 2). */
  slowHostMs?: number;
  /** Allow callback URLs on loopback/private/link-local addresses. Default false. */
  allowPrivate?: boolean;
  /** Period of the sweep for retries and anything the stream missed. Default 1000. */
  sweepIntervalMs?: number;
  /** Claim lease; must exceed the timeout comfortably. Default max(30000, 4 × timeoutMs). */
  leaseMs?: number;
  /** Messages per claim at most. Default 256. */
  chunkSize?: number;
  /** Open the change stream. Default true; without it the sweep alone drives the dispatcher. */
  watch?: boolean;
  /** Pause between two empty polls of the change stream. Default 100. */
  streamIdleMs?: number;
  /** `state` document holding the resume token. Default `notifier.resumeToken`. */
  resumeTokenKey?: string;
  /** How long work for a saturated slow host waits before it is claimed again. Default 500. */
  hostBackoffMs?: number;
  userAgent?: string;
}

export interface NotifierStats {
  delivered: number;
  failedAttempts: number;
  gaveUp: number;
  skipped: number;
  claimed: number;
  /** Notifications put back unattempted because their (slow) host was saturated. */
  deferred: number;
  streamEvents: number;
  streamOpens: number;
  /** Whether the change stream was (last) opened from a stored resume token. */
  resumedFromToken: boolean;
}

interface AttemptResult {
  httpStatus: number;
  error?: string;
  durationMs: number;
  /** Not worth retrying (refused address). */
  permanent?: boolean;
}

interface SendTask {
  url: URL;
  host: string;
  message: NotifyingMessage;
  index: number;
  status: StatusName;
  attemptsBefore: number;
  callback: string;
  secret: string | undefined;
  account: Pick<AccountDoc, "statusUrl" | "webhookSecret"> | undefined;
  /** The claim (lease owner) the outcome is recorded under. */
  claim: string;
}

interface HostState {
  /** Start times of the requests in flight, by send number. */
  active: Map<number, number>;
  /** Moving average of answer times, ms. */
  averageMs: number;
  lastUsed: number;
}

const FINAL_STATUSES: ReadonlySet<StatusName> = new Set([
  "DELIVERED",
  "SEND_ERROR",
  "DELIVERY_ERROR",
]);

export class Notifier {
  private readonly store: Store;
  private readonly commits: BatchCommits;
  private readonly logger: Logger;
  private readonly instanceId: string;
  private readonly schedule: readonly number[];
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private readonly perHostConcurrency: number;
  private readonly slowHostMs: number;
  private readonly allowPrivate: boolean;
  private readonly sweepIntervalMs: number;
  private readonly leaseMs: number;
  private readonly chunkSize: number;
  private readonly watchEnabled: boolean;
  private readonly streamIdleMs: number;
  private readonly tokenKey: string;
  private readonly hostBackoffMs: number;
  private readonly userAgent: string;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly lookup: ReturnType<typeof guardedLookup>;

  private running = false;
  private loop: Promise<void> | undefined;
  private readonly signal = new WakeSignal();
  private sweepTimer: NodeJS.Timeout | undefined;
  private claimSeq = 0;
  private sendSeq = 0;
  /** Claimed messages not yet recorded: sending, queued or being recorded. At most `maxInFlight`. */
  private inFlight = 0;
  private readonly maxInFlight: number;
  /** Requests in flight. */
  private active = 0;
  private readonly queue: SendTask[] = [];
  private readonly hosts = new Map<string, HostState>();
  private readonly sends = new Set<Promise<void>>();
  private results: NotificationOutcome[] = [];
  private flushing: Promise<void> | undefined;

  private streamLoop: Promise<void> | undefined;
  private stream: ChangeStream<Document> | undefined;
  private streamPause: { timer: NodeJS.Timeout; resolve: () => void } | undefined;
  private resumeToken: unknown;
  private savedToken: unknown;
  private readonly counters: NotifierStats = {
    delivered: 0,
    failedAttempts: 0,
    gaveUp: 0,
    skipped: 0,
    claimed: 0,
    deferred: 0,
    streamEvents: 0,
    streamOpens: 0,
    resumedFromToken: false,
  };

  constructor(options: NotifierOptions) {
    this.store = options.store;
    this.commits = new BatchCommits(options.store.batches);
    this.logger = options.logger;
    this.instanceId = options.instanceId;
    this.schedule = options.retrySchedule ?? DEFAULT_RETRY_SCHEDULE_MS;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.concurrency = Math.max(1, options.concurrency ?? 64);
    this.perHostConcurrency = Math.max(
      1,
      options.perHostConcurrency ?? Math.floor(this.concurrency / 4),
    );
    this.slowHostMs = options.slowHostMs ?? Math.min(2_000, this.timeoutMs / 2);
    this.allowPrivate = options.allowPrivate ?? false;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 1_000;
    this.leaseMs = options.leaseMs ?? Math.max(30_000, 4 * this.timeoutMs);
    this.chunkSize = Math.max(1, options.chunkSize ?? 512);
    // Claimed work waits for a request slot at most a few timeouts, well within the lease; two
    // chunks in flight keep a claim running while the previous chunk is sent and recorded.
    this.maxInFlight = Math.max(4 * this.concurrency, 2 * this.chunkSize);
    this.watchEnabled = options.watch ?? true;
    this.streamIdleMs = options.streamIdleMs ?? 100;
    this.tokenKey = options.resumeTokenKey ?? RESUME_TOKEN_KEY;
    this.hostBackoffMs = options.hostBackoffMs ?? 500;
    this.userAgent = options.userAgent ?? "sms-service-webhooks/1";
    const agentOptions = {
      keepAlive: true,
      maxSockets: this.concurrency,
      maxFreeSockets: this.concurrency,
    };
    this.httpAgent = new http.Agent(agentOptions);
    this.httpsAgent = new https.Agent(agentOptions);
    this.lookup = guardedLookup(this.allowPrivate);
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    if (this.watchEnabled) {
      try {
        this.resumeToken = await loadResumeToken(this.store, this.tokenKey);
        this.savedToken = this.resumeToken;
      } catch (error) {
        this.logger.warn({ err: error }, "notifier: cannot read the stored resume token");
      }
      this.streamLoop = this.watchLoop();
    }
    this.sweepTimer = setInterval(() => {
      this.wake();
      void this.persistToken();
      this.pruneHosts();
    }, this.sweepIntervalMs);
    this.sweepTimer.unref();
    this.signal.wake();
    this.loop = this.run();
    this.logger.info({ instanceId: this.instanceId }, "notifier started");
  }

  /** Stops claiming, finishes and records the requests in flight, closes the stream, stores its token. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    this.signal.release();
    this.interruptStreamPause();
    const closing = this.stream?.close().catch(() => undefined);
    await this.loop;
    while (this.sends.size > 0 || this.queue.length > 0) {
      if (this.sends.size === 0) this.pump();
      await Promise.allSettled([...this.sends]);
    }
    while (this.flushing || this.results.length > 0) await this.flush();
    await closing;
    await this.streamLoop;
    await this.persistToken();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
    this.logger.info({ instanceId: this.instanceId, ...this.counters }, "notifier stopped");
  }

  /** Looks for due notifications now. */
  wake(): void {
    this.signal.wake();
  }

  stats(): NotifierStats {
    return { ...this.counters };
  }

  // ---- dispatch loop --------------------------------------------------------------------------

  private async run(): Promise<void> {
    while (this.running) {
      if (!(await this.signal.next())) continue;
      // Claim in chunks: wait until a good part of the pipeline is free (a recorded outcome wakes us).
      const free = this.maxInFlight - this.inFlight;
      if (free <= 0 || (this.inFlight > 0 && free < Math.min(this.chunkSize, this.maxInFlight / 4)))
        continue;
      const limit = Math.min(free, this.chunkSize);
      const token = `${this.instanceId}:${++this.claimSeq}`;
      let claimed: NotifyingMessage[];
      let accounts: Map<string, Pick<AccountDoc, "_id" | "statusUrl" | "webhookSecret">>;
      const claimStarted = Date.now();
      try {
        claimed = await claimDueNotifications(this.store.messages, {
          now: new Date(),
          limit,
          leaseMs: this.leaseMs,
          token,
          commits: this.commits,
        });
        accounts =
          claimed.length > 0
            ? await loadWebhookAccounts(
                this.store.accounts,
                claimed.map((m) => m.accountId),
              )
            : new Map();
      } catch (error) {
        // Claims made before the failure run out and are taken up again.
        this.logger.error({ err: error }, "notifier: claiming failed");
        await new Promise((resolve) => setTimeout(resolve, Math.min(1000, this.sweepIntervalMs)));
        this.signal.wake();
        continue;
      }
      this.counters.claimed += claimed.length;
      this.inFlight += claimed.length;
      if (claimed.length > 0) {
        this.logger.debug(
          {
            limit,
            claimed: claimed.length,
            ms: Date.now() - claimStarted,
            inFlight: this.inFlight,
          },
          "notifier: claimed",
        );
      }
      for (const message of claimed) this.dispatch(message, accounts.get(message.accountId), token);
      this.pump();
      if (claimed.length === limit) this.signal.wake(); // there may be more due
    }
  }

  /** Decides what to do with one claimed message: queue its first pending notification, or record at once. */
  private dispatch(
    message: NotifyingMessage,
    account: Pick<AccountDoc, "statusUrl" | "webhookSecret"> | undefined,
    claim: string,
  ): void {
    const now = new Date();
    const length = message.notifications.length;
    const index = message.notifications.findIndex((n) => n.state === "pending");
    const notification = index < 0 ? undefined : message.notifications[index];
    const base = { messageId: message._id, length, claim };
    if (!notification) {
      this.record({ ...base, index: length });
      return;
    }
    const last = FINAL_STATUSES.has(notification.status);
    const handled = { ...base, index, notification: { ...notification } };
    if (notification.nextAttemptAt && notification.nextAttemptAt.getTime() > now.getTime()) {
      this.record({
        ...handled,
        state: "pending",
        nextAttemptAt: notification.nextAttemptAt,
        deferred: true,
      });
      return;
    }
    const callback = message.statusCallback || account?.statusUrl;
    if (!callback) {
      this.counters.skipped++;
      this.record({ ...handled, state: "skipped", last });
      return;
    }
    let url: URL;
    try {
      url = notificationUrl(callback, message._id, notification.status, message.batchId);
      checkCallbackUrl(url, this.allowPrivate);
    } catch (error) {
      const attempt: WebhookAttemptDoc = {
        at: now,
        httpStatus: 0,
        error: describe(error),
        durationMs: 0,
      };
      this.counters.gaveUp++;
      this.logger.warn(
        { messageId: message._id, url: callback, error: attempt.error },
        "webhook refused",
      );
      this.record({ ...handled, state: "gave_up", url: callback, attempt, last });
      return;
    }
    this.queue.push({
      url,
      host: url.host,
      message,
      index,
      status: notification.status,
      attemptsBefore: notification.attempts.length,
      callback,
      secret: account?.webhookSecret,
      account,
      claim,
    });
  }

  /** Starts queued sends while slots are free; work for a saturated slow host goes back for a moment. */
  private pump(): void {
    while (this.active < this.concurrency && this.queue.length > 0) {
      const task = this.queue.shift() as SendTask;
      if (this.hostSaturated(task.host)) {
        this.counters.deferred++;
        const snapshot = task.message.notifications[task.index];
        this.record({
          ...(snapshot && { notification: { ...snapshot } }),
          messageId: task.message._id,
          claim: task.claim,
          length: task.message.notifications.length,
          index: task.index,
          state: "pending",
          nextAttemptAt: new Date(Date.now() + this.hostBackoffMs),
          deferred: true,
        });
        continue;
      }
      this.send(task);
    }
  }

  private hostSaturated(host: string): boolean {
    const state = this.hosts.get(host);
    if (!state || state.active.size < this.perHostConcurrency) return false;
    if (state.averageMs >= this.slowHostMs) return true;
    const threshold = Date.now() - this.slowHostMs;
    for (const started of state.active.values()) if (started < threshold) return true;
    return false;
  }

  /** Sends one notification and records the outcome. */
  private send(task: SendTask): void {
    const { message, index, host } = task;
    const at = new Date();
    const key = ++this.sendSeq;
    const state = this.hosts.get(host) ?? {
      active: new Map<number, number>(),
      averageMs: 0,
      lastUsed: 0,
    };
    state.active.set(key, at.getTime());
    state.lastUsed = Date.now();
    this.hosts.set(host, state);
    this.active++;
    const snapshot = message.notifications[index];
    const base = {
      messageId: message._id,
      length: message.notifications.length,
      index,
      claim: task.claim,
      ...(snapshot && { notification: { ...snapshot } }),
    };
    const send = this.attempt(task.url, `msg_${message._id}_${index}`, task.secret)
      .then((result) => {
        state.averageMs =
          state.averageMs === 0
            ? result.durationMs
            : 0.7 * state.averageMs + 0.3 * result.durationMs;
        const attempt: WebhookAttemptDoc = {
          at,
          httpStatus: result.httpStatus,
          durationMs: result.durationMs,
        };
        if (result.error) attempt.error = result.error;
        const outcome: NotificationOutcome = {
          ...base,
          url: task.callback,
          attempt,
          last: FINAL_STATUSES.has(task.status),
        };
        if (result.httpStatus >= 200 && result.httpStatus < 300) {
          outcome.state = "delivered";
          this.counters.delivered++;
          const next = message.notifications[index + 1];
          if (next?.state === "pending") {
            // The next status of this message is already known: send it under the same claim
            // rather than releasing the message and claiming it again (half the claims, in order).
            outcome.keepLease = true;
            this.record(outcome);
            const handled = message.notifications[index];
            if (handled) handled.state = "delivered";
            this.inFlight++;
            this.dispatch(message, task.account, task.claim);
            this.pump();
            return;
          }
        } else {
          this.counters.failedAttempts++;
          const delay = result.permanent
            ? undefined
            : retryDelayMs(this.schedule, task.attemptsBefore + 1);
          if (delay === undefined) {
            outcome.state = "gave_up";
            this.counters.gaveUp++;
            this.logger.warn(
              {
                messageId: message._id,
                status: task.status,
                url: task.callback,
                error: attempt.error ?? attempt.httpStatus,
              },
              "webhook given up",
            );
          } else {
            outcome.state = "pending";
            outcome.nextAttemptAt = new Date(Date.now() + delay);
          }
        }
        this.record(outcome);
      })
      .finally(() => {
        this.active--;
        state.active.delete(key);
        this.sends.delete(send);
        this.pump();
      });
    this.sends.add(send);
  }

  /** Forgets hosts not used for ten minutes. */
  private pruneHosts(): void {
    const old = Date.now() - 600_000;
    for (const [host, state] of this.hosts)
      if (state.active.size === 0 && state.lastUsed < old) this.hosts.delete(host);
  }

  /** One GET; never throws. */
  private attempt(url: URL, webhookId: string, secret: string | undefined): Promise<AttemptResult> {
    const started = Date.now();
    const pathAndQuery = `${url.pathname}${url.search}`;
    const headers: Record<string, string> = { "user-agent": this.userAgent };
    if (secret) {
      try {
        Object.assign(headers, webhookHeaders(secret, webhookId, pathAndQuery));
      } catch (error) {
        this.logger.warn({ err: error }, "notifier: cannot sign with the account's webhook secret");
      }
    }
    return new Promise<AttemptResult>((resolve) => {
      let settled = false;
      const finish = (result: Omit<AttemptResult, "durationMs">) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...result, durationMs: Date.now() - started });
      };
      const isHttps = url.protocol === "https:";
      const request = (isHttps ? https : http).request(
        url,
        {
          method: "GET",
          headers,
          agent: isHttps ? this.httpsAgent : this.httpAgent,
          lookup: this.lookup,
        },
        (response) => {
          const status = response.statusCode ?? 0;
          response.on("error", (error) => finish({ httpStatus: 0, error: describe(error) }));
          response.on("end", () => {
            finish(
              status >= 200 && status < 300
                ? { httpStatus: status }
                : { httpStatus: status, error: `HTTP ${status}` },
            );
          });
          response.resume();
        },
      );
      const timer = setTimeout(() => {
        request.destroy(new Error(`timeout after ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      request.on("error", (error) => {
        finish({
          httpStatus: 0,
          error: describe(error),
          permanent: error instanceof AddressBlockedError,
        });
      });
      request.end();
    });
  }

  // ---- recording --------------------------------------------------------------------------------

  private record(outcome: NotificationOutcome): void {
    this.results.push(outcome);
    if (!this.flushing) this.flushing = this.flushLoop();
  }

  private async flush(): Promise<void> {
    if (this.flushing) await this.flushing;
    else if (this.results.length > 0) {
      this.flushing = this.flushLoop();
      await this.flushing;
    }
  }

  /** Writes buffered outcomes, one bulkWrite per round, until none is left. */
  private async flushLoop(): Promise<void> {
    try {
      while (this.results.length > 0) {
        const batch = this.results;
        this.results = [];
        const flushStarted = Date.now();
        try {
          await recordNotificationOutcomes(this.store.messages, batch, new Date());
          this.logger.debug(
            { count: batch.length, ms: Date.now() - flushStarted },
            "notifier: recorded",
          );
        } catch (error) {
          // The claims run out and the notifications are sent again (at least once).
          this.logger.error(
            { err: error, count: batch.length },
            "notifier: recording outcomes failed",
          );
        }
        this.inFlight -= batch.length;
        this.wake();
      }
    } finally {
      this.flushing = undefined;
    }
  }

  // ---- change stream ----------------------------------------------------------------------------

  /**
   * Polls the change stream with `tryNext`, pausing `streamIdleMs` after an empty answer (the test
   * emulator answers getMore at once instead of waiting, and scans its whole oplog each time), and
   * reopens it after an error.
   */
  private async watchLoop(): Promise<void> {
    let failures = 0;
    while (this.running) {
      const options: ChangeStreamOptions = { maxAwaitTimeMS: 500 };
      const resuming = this.resumeToken !== undefined && this.resumeToken !== null;
      if (resuming) options.resumeAfter = this.resumeToken as ChangeStreamOptions["resumeAfter"];
      let events = 0;
      let stream: ChangeStream<Document> | undefined;
      try {
        stream = this.store.messages.watch<Document>(
          // Only a wake-up signal: the event's resume token is all that is needed.
          [
            { $match: { operationType: { $in: ["insert", "update", "replace"] } } },
            { $project: { _id: 1 } },
          ],
          options,
        );
        this.stream = stream;
        this.counters.streamOpens++;
        this.counters.resumedFromToken = resuming;
        while (this.running) {
          const event = await stream.tryNext();
          if (event) {
            events++;
            failures = 0;
            this.counters.streamEvents++;
            this.resumeToken = event._id;
            this.wake();
            // Drain what the last getMore brought; pause before asking the server again.
            if (bufferedEvents(stream) !== 0) continue;
          }
          if (!this.running) break;
          await this.streamPauseFor(this.streamIdleMs);
        }
      } catch (error) {
        if (!this.running) break;
        failures = events > 0 ? 1 : failures + 1;
        if (failures >= 2 && this.resumeToken !== undefined) {
          // A token that cannot be resumed from (history lost, or refused): start afresh; the sweep
          // covers what happened meanwhile.
          this.logger.warn(
            { err: error },
            "notifier: change stream cannot resume from the stored token; starting afresh",
          );
          this.resumeToken = undefined;
        } else {
          this.logger.warn({ err: error }, "notifier: change stream failed; reopening");
        }
        this.wake();
        await this.streamPauseFor(Math.min(1000, this.sweepIntervalMs));
      } finally {
        if (stream) {
          const latest = stream.resumeToken;
          if (events > 0 && latest !== undefined && latest !== null) this.resumeToken = latest;
          await stream.close().catch(() => undefined);
        }
        if (this.stream === stream) this.stream = undefined;
      }
    }
  }

  private streamPauseFor(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.streamPause = undefined;
        resolve();
      }, ms);
      this.streamPause = { timer, resolve };
    });
  }

  private interruptStreamPause(): void {
    const pause = this.streamPause;
    this.streamPause = undefined;
    if (pause) {
      clearTimeout(pause.timer);
      pause.resolve();
    }
  }

  private async persistToken(): Promise<void> {
    const token = this.resumeToken;
    if (token === undefined || token === this.savedToken) return;
    try {
      await saveResumeToken(this.store, token, this.tokenKey);
      this.savedToken = token;
    } catch (error) {
      this.logger.warn({ err: error }, "notifier: cannot store the resume token");
    }
  }
}

/** `<callback>?…&id=<id>&status=<STATUS>[&batch_id=<id>]`, keeping the callback's own query. */
export function notificationUrl(
  callback: string,
  messageId: number,
  status: string,
  batchId?: number,
): URL {
  const url = new URL(callback);
  url.hash = "";
  const params = new URLSearchParams({ id: String(messageId), status });
  if (batchId !== undefined) params.set("batch_id", String(batchId));
  const existing = url.search.length > 1 ? `${url.search.slice(1)}&` : "";
  url.search = `?${existing}${params.toString()}`;
  return url;
}

/**
 * Events the change stream holds already (no server round trip to read them); undefined when the
 * driver does not tell. Reads the driver's internal cursor, hence the guards.
 */
function bufferedEvents(stream: ChangeStream<Document>): number | undefined {
  const cursor = (stream as unknown as { cursor?: { bufferedCount?: () => number } }).cursor;
  return typeof cursor?.bufferedCount === "function" ? cursor.bufferedCount() : undefined;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
