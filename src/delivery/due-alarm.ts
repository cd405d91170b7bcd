/**
 * Calls its owner at each of a set of due times, earliest first, with the items added for the
 * times that have passed (several at once when they passed together). The simulator's receipts
 * come due at their submission's time plus the receipt delay: an alarm kept only for the earliest
 * time left receipts due after it to the next poll, up to its interval late, which under load was
 * every batch's (figure 6b, docs/decisions.md).
 */

/** Due times kept at most: beyond, the latest are left to the owner's poll. */
const MAX_TIMES = 10_000;

export class DueAlarm<T = never> {
  /** Ascending, distinct (epoch ms). */
  private readonly times: number[] = [];
  private readonly items = new Map<number, T[]>();
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;

  constructor(private readonly onDue: (items: T[]) => void) {}

  /** Calls the owner at `at` (epoch ms), or soon after, with `items` among those due. */
  add(at: number, items: readonly T[] = []): void {
    const times = this.times;
    let low = 0;
    let high = times.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((times[mid] as number) < at) low = mid + 1;
      else high = mid;
    }
    if (times[low] !== at) {
      if (times.length >= MAX_TIMES) {
        if (low >= times.length) return;
        this.items.delete(times.pop() as number);
      }
      times.splice(low, 0, at);
    }
    if (items.length > 0) this.items.set(at, [...(this.items.get(at) ?? []), ...items]);
    if (at < this.armedFor) this.arm();
  }

  /** Forgets every time and item; the owner is not called again until the next `add`. */
  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    this.times.length = 0;
    this.items.clear();
  }

  /** Times waiting (for tests and diagnostics). */
  get size(): number {
    return this.times.length;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const next = this.times[0];
    if (next === undefined) return;
    this.armedFor = next;
    this.timer = setTimeout(() => this.ring(), Math.max(0, next - Date.now()));
    this.timer.unref();
  }

  private ring(): void {
    const now = Date.now();
    let passed = 0;
    const due: T[] = [];
    while (passed < this.times.length && (this.times[passed] as number) <= now) {
      const at = this.times[passed] as number;
      due.push(...(this.items.get(at) ?? []));
      this.items.delete(at);
      passed++;
    }
    this.times.splice(0, passed);
    this.arm();
    if (passed > 0) this.onDue(due);
  }
}
