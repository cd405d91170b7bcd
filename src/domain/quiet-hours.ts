/**
 * Quiet hours (docs/design.md "Message reads, client references, scheduled sends and cancel"):
 * `{start, end}` as `HH:MM` in the recipient's local time, the window running from start up to
 * (not including) end, across midnight when end comes first. Offsets and daylight saving come from
 * the platform's ICU (Intl), the zones of a number from quiet-hours/zones.ts. Pure: no I/O.
 */

export interface QuietHours {
  /** `HH:MM`, 00:00 to 23:59. */
  start: string;
  end: string;
}

const HH_MM = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;

/** Minutes after midnight of an `HH:MM`; undefined when it is not one. */
export function minutesOf(hhmm: string): number | undefined {
  const m = HH_MM.exec(hhmm);
  return m ? Number(m[1]) * 60 + Number(m[2]) : undefined;
}

/** The errors of quiet hours, by field; empty when valid. */
export function quietHoursErrors(hours: { start: string; end: string }): Record<string, string> {
  const errors: Record<string, string> = {};
  const start = minutesOf(hours.start);
  const end = minutesOf(hours.end);
  if (start === undefined) errors.start = "start must be a time HH:MM, such as 21:00";
  if (end === undefined) errors.end = "end must be a time HH:MM, such as 08:00";
  if (start !== undefined && start === end) errors.end = "end must differ from start";
  return errors;
}

const formats = new Map<string, Intl.DateTimeFormat>();

/** Minutes after local midnight at `at` in `zone` (seconds dropped). */
export function localMinutes(at: Date, zone: string): number {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
    formats.set(zone, format);
  }
  let hour = 0;
  let minute = 0;
  for (const part of format.formatToParts(at)) {
    if (part.type === "hour") hour = Number(part.value);
    else if (part.type === "minute") minute = Number(part.value);
  }
  return hour * 60 + minute;
}

/** Whether local minute `m` falls in the window [start, end), which may cross midnight. */
export function inWindow(m: number, start: number, end: number): boolean {
  return start < end ? m >= start && m < end : m >= start || m < end;
}

function quietIn(at: Date, zone: string, start: number, end: number): boolean {
  return inWindow(localMinutes(at, zone), start, end);
}

/** The first moment after `at` (to the minute) when `zone`'s local clock reads `end`. */
function nextEnd(at: Date, zone: string, end: number): Date {
  const base = Math.floor(at.getTime() / 60_000) * 60_000;
  const wait = (end - localMinutes(at, zone) + 1440) % 1440;
  let candidate = new Date(base + wait * 60_000);
  // A daylight-saving change in between moves the local clock: a second step corrects it.
  const off = (localMinutes(candidate, zone) - end + 1440) % 1440;
  if (off !== 0)
    candidate = new Date(candidate.getTime() - (off > 720 ? off - 1440 : off) * 60_000);
  return candidate;
}

/**
 * When a message due at `due` to a number in `zones` may go: `undefined` when it is outside quiet
 * hours in every zone (no hold); else the first moment within 24 h when it is outside them in all
 * zones, and when there is none, the end of the window in the first zone.
 */
export function holdUntil(
  due: Date,
  zones: readonly string[],
  hours: QuietHours,
): Date | undefined {
  const start = minutesOf(hours.start);
  const end = minutesOf(hours.end);
  if (start === undefined || end === undefined || start === end || zones.length === 0) {
    return undefined;
  }
  if (!zones.some((z) => quietIn(due, z, start, end))) return undefined;
  const candidates = zones
    .map((z) => nextEnd(due, z, end))
    .sort((a, b) => a.getTime() - b.getTime());
  for (const c of candidates) {
    if (!zones.some((z) => quietIn(c, z, start, end))) return c;
  }
  return nextEnd(due, zones[0] as string, end);
}
