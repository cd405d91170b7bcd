/**
 * Counts over the last few minutes, kept in one bucket per minute (docs/design.md "Operator
 * console": the carriers page shows the submissions and refusals of the last 15 minutes). Adding
 * is an array write; the sum is read when the instance writes its carriers' state (every 5 s), so
 * no part costs a database write and the memory is fixed whatever the traffic.
 */
export class MinuteCounts<Name extends string> {
  /** The minute (ms since the epoch / 60 000) each slot holds, -1 when never used. */
  private readonly slotMinute: number[];
  private readonly slots: Record<Name, number[]>;

  constructor(
    names: readonly Name[],
    private readonly minutes = 15,
    private readonly now: () => number = Date.now,
  ) {
    this.slotMinute = new Array(minutes).fill(-1);
    this.slots = Object.fromEntries(
      names.map((name) => [name, new Array(minutes).fill(0)]),
    ) as Record<Name, number[]>;
  }

  add(name: Name, count = 1): void {
    const minute = Math.floor(this.now() / 60_000);
    const slot = minute % this.minutes;
    if (this.slotMinute[slot] !== minute) {
      // A slot last used `minutes` or more ago starts again.
      this.slotMinute[slot] = minute;
      for (const counts of Object.values<number[]>(this.slots)) counts[slot] = 0;
    }
    (this.slots[name] as number[])[slot] = ((this.slots[name] as number[])[slot] ?? 0) + count;
  }

  /** Each name's sum over this minute and the `minutes - 1` before it. */
  sums(): Record<Name, number> {
    const minute = Math.floor(this.now() / 60_000);
    const sums = {} as Record<Name, number>;
    for (const [name, counts] of Object.entries<number[]>(this.slots)) {
      let sum = 0;
      counts.forEach((count, slot) => {
        if (minute - (this.slotMinute[slot] as number) < this.minutes) sum += count;
      });
      sums[name as Name] = sum;
    }
    return sums;
  }
}
