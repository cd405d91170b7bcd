// Group commit: what is asked for while `maxInFlight` groups are in flight waits, and goes out
// together as the next group, so heavy load pays one round trip per group instead of one per
// item, and a lone item is a group of one (no wait). The message writer's sends and the opt-out
// reads of single sends use it (store/message-writer.ts, opt-outs/list-reads.ts).

export interface GroupCommitOptions<T> {
  maxInFlight: number;
  /** How many of the waiting items (at least one is taken) make the next group. */
  groupSize: (waiting: readonly T[]) => number;
  /** Issues a group; when it rejects, every item of the group is rejected with its error. */
  run: (group: T[]) => Promise<void>;
}

export class GroupCommit<T extends { reject: (error: unknown) => void }> {
  private waiting: T[] = [];
  private inFlight = 0;

  constructor(private readonly options: GroupCommitOptions<T>) {}

  /** Items waiting for a group. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  push(item: T): void {
    this.waiting.push(item);
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const group = this.waiting.splice(0, Math.max(1, this.options.groupSize(this.waiting)));
      this.inFlight++;
      this.options
        .run(group)
        .catch((error: unknown) => {
          for (const item of group) item.reject(error);
        })
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }
}
