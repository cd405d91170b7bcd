/**
 * The webhook retry schedule (docs/design.md "Status webhooks"): the delays before each retry after a
 * failed attempt. The first attempt is immediate; with N delays a notification gets N + 1 attempts
 * before it is given up. Configured by `SMS_WEBHOOK_RETRY_SCHEDULE`, e.g. `1s,5s,30s,5m,2h`.
 */

/**
 * Close to the Standard Webhooks schedule (immediately, 5s, 5m, 30m, 2h, 5h, 10h, 10h): eight
 * attempts over about 27.5 hours, then the notification is given up.
 */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = Object.freeze([
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
]);

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** One duration: a non-negative number with a unit among ms, s, m, h, d (e.g. `250ms`, `1.5s`, `2h`). */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/i.exec(text.trim());
  const unit = match?.[2] ? UNIT_MS[match[2].toLowerCase()] : undefined;
  if (!match?.[1] || unit === undefined) {
    throw new RangeError(
      `invalid duration ${JSON.stringify(text)}: expected e.g. 500ms, 5s, 5m, 2h, 1d`,
    );
  }
  return Math.round(Number(match[1]) * unit);
}

/**
 * Parses a comma-separated schedule such as `1s,5s,30s,5m,2h` into delays in milliseconds.
 * Undefined or blank gives the default schedule; `none` gives no retry at all. Throws a RangeError
 * naming the bad entry otherwise.
 */
export function parseRetrySchedule(text: string | undefined): number[] {
  if (text === undefined || text.trim() === "") return [...DEFAULT_RETRY_SCHEDULE_MS];
  if (text.trim().toLowerCase() === "none") return [];
  return text.split(",").map((entry) => parseDuration(entry));
}

/**
 * The delay before the next attempt once `attemptsMade` attempts failed, or undefined when the
 * schedule is exhausted and the notification is to be given up.
 */
export function retryDelayMs(
  schedule: readonly number[],
  attemptsMade: number,
): number | undefined {
  if (attemptsMade < 1) return 0;
  return schedule[attemptsMade - 1];
}
