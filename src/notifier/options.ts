/**
 * The notifier's options and their defaults (README "Configuration" for the environment variables
 * that set some of them in the service).
 */

import type { Logger } from "../logger.ts";
import type { ChangeStreamMetrics } from "../metrics/change-stream.ts";
import type { WebhookMetrics } from "../metrics/webhooks.ts";
import { DEFAULT_LEASE_MS } from "../scheduling/lease-keeper.ts";
import type { Store } from "../store/database.ts";
import { RESUME_TOKEN_KEY } from "./resume-token.ts";
import { DEFAULT_RETRY_SCHEDULE_MS } from "./retry-schedule.ts";
import { DEFAULT_SECRET_OVERLAP_MS } from "./signature.ts";

/** What the notifier reports to the metrics (metrics/webhooks.ts, metrics/change-stream.ts). */
export interface NotifierMetrics {
  webhooks: WebhookMetrics;
  changeStream: ChangeStreamMetrics;
}

const NO_METRICS: NotifierMetrics = {
  webhooks: { attempt: () => undefined },
  changeStream: { event: () => undefined },
};

export interface NotifierOptions {
  store: Store;
  /** Default: none kept. */
  metrics?: NotifierMetrics;
  logger: Logger;
  /** Distinguishes this instance's claims from other instances'. */
  instanceId: string;
  /** Delays before each retry, in ms (see retry-schedule.ts). Default: the Standard Webhooks-like one. */
  retrySchedule?: readonly number[];
  /** Per-request timeout (until the whole response is read). Default 5000. */
  timeoutMs?: number;
  /** Requests in flight at most, over all receivers. Default 64. */
  concurrency?: number;
  /** Requests in flight at most to one receiver (scheme, host, port and path). Default 16. */
  receiverConcurrency?: number;
  /** Requests in flight at most for one account. Default 32. */
  accountConcurrency?: number;
  /** Claimed, unfinished notifications of one account in this instance at most. Default max(4 × accountConcurrency, chunkSize): one account alone still claims in whole chunks. */
  accountClaimLimit?: number;
  /** Tasks waiting for one saturated receiver at most; the excess goes back. Default accountClaimLimit. */
  receiverQueueLimit?: number;
  /** How long a task waits for a saturated receiver before it goes back. Default timeoutMs. */
  receiverWaitMs?: number;
  /** How long work that goes back unattempted waits before it is claimed again. Default 1000. */
  deferMs?: number;
  /** Allow callback URLs on loopback/private/link-local addresses. Default false. */
  allowPrivate?: boolean;
  /** Period of the wake-up for retries and lanes that came due. Default 1000. */
  sweepIntervalMs?: number;
  /** Period of the sweep that marks the lanes of accounts with overdue work. Default 5000. */
  overdueSweepMs?: number;
  /** Work due for longer than this with its lane unmarked is repaired by that sweep. Default 5000. */
  overdueGraceMs?: number;
  /**
   * Claim lease, renewed every third of it while the work is here. Default 30000, the delivery
   * worker's (DEFAULT_LEASE_MS): a dead instance's notifications come back with its deliveries.
   */
  leaseMs?: number;
  /** Messages per claim round at most. Default 512. */
  chunkSize?: number;
  /** Account lanes served per claim round at most. Default 32. */
  lanesPerRound?: number;
  /** Open the change stream. Default true; without it the periodic wake-up alone drives the dispatcher. */
  watch?: boolean;
  /** Pause between two empty polls of the change stream. Default 100. */
  streamIdleMs?: number;
  /** `state` document holding the resume token. Default `notifier.resumeToken`. */
  resumeTokenKey?: string;
  userAgent?: string;
  /** How long a rotated-out webhook secret keeps signing beside the new one. Default 24 h. */
  secretOverlapMs?: number;
}

/** Every option with its value: the given one or its default. */
export type ResolvedNotifierOptions = Required<NotifierOptions> & {
  /** Claimed messages not yet recorded (sending, queued or being recorded): at most this many. */
  maxInFlight: number;
};

export function resolveNotifierOptions(options: NotifierOptions): ResolvedNotifierOptions {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const concurrency = Math.max(1, options.concurrency ?? 64);
  const accountConcurrency = Math.max(1, options.accountConcurrency ?? 32);
  const chunkSize = Math.max(1, options.chunkSize ?? 512);
  const accountClaimLimit = Math.max(
    1,
    options.accountClaimLimit ?? Math.max(4 * accountConcurrency, chunkSize),
  );
  const sweepIntervalMs = options.sweepIntervalMs ?? 1_000;
  return {
    ...options,
    metrics: options.metrics ?? NO_METRICS,
    retrySchedule: options.retrySchedule ?? DEFAULT_RETRY_SCHEDULE_MS,
    timeoutMs,
    concurrency,
    receiverConcurrency: Math.max(1, options.receiverConcurrency ?? 16),
    accountConcurrency,
    accountClaimLimit,
    receiverQueueLimit: Math.max(1, options.receiverQueueLimit ?? accountClaimLimit),
    receiverWaitMs: options.receiverWaitMs ?? timeoutMs,
    deferMs: options.deferMs ?? 1_000,
    allowPrivate: options.allowPrivate ?? false,
    sweepIntervalMs,
    overdueSweepMs: options.overdueSweepMs ?? 5_000,
    overdueGraceMs: options.overdueGraceMs ?? 5_000,
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    chunkSize,
    lanesPerRound: Math.max(1, options.lanesPerRound ?? 32),
    secretOverlapMs: options.secretOverlapMs ?? DEFAULT_SECRET_OVERLAP_MS,
    watch: options.watch ?? true,
    streamIdleMs: options.streamIdleMs ?? 100,
    resumeTokenKey: options.resumeTokenKey ?? RESUME_TOKEN_KEY,
    userAgent: options.userAgent ?? "sms-service-webhooks/1",
    maxInFlight: Math.max(4 * concurrency, 2 * chunkSize),
  };
}
