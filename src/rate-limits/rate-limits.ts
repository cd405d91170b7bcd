import { Code, type ConnectError } from "@connectrpc/connect";
import { fieldErrors, type Reason } from "../errors/api-errors.ts";
import { type Policy, refusalHeaders } from "./headers.ts";
import { KeyedBuckets } from "./keyed-buckets.ts";

// The two limits of the design, per instance and in memory: requests per account (a token bucket
// of SMS_RATE_LIMIT_RPS a second holding twice that, so a client may burst), and failed
// authentications per client address (SMS_AUTH_FAILURES_PER_MIN, saved up to a minute's worth).
// Both doors reach them through the services (src/services/call-guards.ts); a refusal is
// RESOURCE_EXHAUSTED with the retry hint in its metadata, which REST answers as 429.

export interface RateLimitSettings {
  /** Requests per second per account; 0 turns the limit off. */
  requestsPerSecond: number;
  /** Failed authentications per minute per client address; 0 turns the limit off. */
  authFailuresPerMinute: number;
}

export class RateLimits {
  private readonly accounts: KeyedBuckets | undefined;
  private readonly failures: KeyedBuckets | undefined;
  private readonly accountPolicy: Policy;
  private readonly failurePolicy: Policy;

  constructor(readonly settings: RateLimitSettings) {
    const { requestsPerSecond: rps, authFailuresPerMinute: perMinute } = settings;
    if (rps > 0) this.accounts = new KeyedBuckets(rps, 2 * rps);
    if (perMinute > 0) this.failures = new KeyedBuckets(perMinute / 60, perMinute);
    this.accountPolicy = { name: "account", quota: rps, windowSeconds: 1 };
    this.failurePolicy = { name: "auth-failures", quota: perMinute, windowSeconds: 60 };
  }

  /**
   * Refuses every call from an address whose failed authentications used up its allowance, with
   * good credentials too: otherwise a guesser would learn which guess was right.
   */
  admitAddress(address: string | undefined): void {
    if (!this.failures || address === undefined) return;
    const wait = this.failures.msUntilToken(address);
    if (wait > 0) {
      throw refusal(
        this.failurePolicy,
        wait,
        `too many failed authentications from this address: at most ${this.settings.authFailuresPerMinute} a minute`,
        "AUTH_FAILURES_LIMITED",
      );
    }
  }

  /**
   * Counts a failed authentication. Attempts that were admitted together all count, into debt if
   * need be, so a burst of guesses only blocks the address for longer.
   */
  authenticationFailed(address: string | undefined): void {
    if (address !== undefined) this.failures?.charge(address);
  }

  /** Takes one request of the account's allowance, or refuses the call. */
  admitAccount(accountId: string): void {
    const taken = this.accounts?.tryTake(accountId);
    if (!taken || taken.taken) return;
    const rps = this.settings.requestsPerSecond;
    throw refusal(
      this.accountPolicy,
      taken.retryAfterMs,
      `too many requests for this account: at most ${rps} a second (bursts of ${2 * rps})`,
    );
  }
}

function refusal(
  policy: Policy,
  retryAfterMs: number,
  why: string,
  reason: Reason = "RATE_LIMITED",
): ConnectError {
  const headers = refusalHeaders(policy, retryAfterMs);
  const error = fieldErrors(
    Code.ResourceExhausted,
    { request: `${why}; retry after ${headers["retry-after"]} s` },
    { reason, retryAfterSeconds: Number(headers["retry-after"]) },
  );
  for (const [name, value] of Object.entries(headers)) error.metadata.set(name, value);
  return error;
}
