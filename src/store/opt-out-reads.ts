import { DeadlineExceeded } from "./deadline.ts";
import { canonicalNumber, type OptOutStore, optedOutAmong, optOutId } from "./opt-outs.ts";

// Grouped reads of the opt-out list for single sends: the reads asked for while others are in
// flight are issued together, as one `$in` on the `_id` index, the way the message writer groups
// the sends' writes (store/message-writer.ts). One read per send was the one database command not
// shared across sends, and half of POST /sms's cost on the test database (docs/benchmarks.md).
// A lone read is a group of one, so light load pays no wait.

/** Reads of more numbers than this (a batch's) are issued on their own, as they come. */
const GROUPED_MAX_NUMBERS = 16;
/** Keys in one grouped `$in`. */
const MAX_GROUP_KEYS = 1024;
const MAX_IN_FLIGHT = 2;

interface PendingRead {
  /** `_id` of each number asked for, to the canonical number. */
  keys: Map<string, string>;
  /** Local epoch ms past which the caller no longer waits. */
  until: number;
  resolve: (found: Set<string>) => void;
  reject: (error: unknown) => void;
}

export class OptOutReads {
  private queue: PendingRead[] = [];
  private inFlight = 0;

  constructor(private readonly store: OptOutStore) {}

  /** The canonical numbers among `numbers` on `accountId`'s opt-out list. */
  among(
    accountId: string,
    numbers: readonly string[],
    options: { maxTimeMS: number; signal?: AbortSignal },
  ): Promise<Set<string>> {
    if (numbers.length > GROUPED_MAX_NUMBERS) {
      return optedOutAmong(this.store, accountId, numbers, options);
    }
    const keys = new Map<string, string>();
    for (const n of numbers) {
      const number = canonicalNumber(n);
      keys.set(optOutId({ accountId, number }), number);
    }
    if (keys.size === 0) return Promise.resolve(new Set());
    return new Promise((resolve, reject) => {
      this.queue.push({ keys, until: Date.now() + options.maxTimeMS, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_IN_FLIGHT && this.queue.length > 0) {
      const group: PendingRead[] = [];
      let keyCount = 0;
      for (const next of this.queue) {
        if (group.length > 0 && keyCount + next.keys.size > MAX_GROUP_KEYS) break;
        group.push(next);
        keyCount += next.keys.size;
      }
      this.queue.splice(0, group.length);
      this.inFlight++;
      this.readGroup(group)
        .catch((error: unknown) => {
          for (const read of group) read.reject(error);
        })
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }

  private async readGroup(queued: PendingRead[]): Promise<void> {
    const now = Date.now();
    const group = queued.filter((read) => {
      if (read.until > now) return true;
      read.reject(new DeadlineExceeded());
      return false;
    });
    if (group.length === 0) return;
    // The latest caller's time: each caller is answered at its own deadline by its call's guard
    // (services/database-deadlines.ts), so an earlier one is never held past it.
    const maxTimeMS = Math.max(...group.map((read) => read.until)) - now;
    const ids = [...new Set(group.flatMap((read) => [...read.keys.keys()]))];
    const found = await this.store.optOuts
      .find({ _id: { $in: ids } }, { projection: { _id: 1 }, maxTimeMS })
      .toArray();
    const listed = new Set(found.map((doc) => doc._id));
    for (const read of group) {
      const numbers = new Set<string>();
      for (const [id, number] of read.keys) if (listed.has(id)) numbers.add(number);
      read.resolve(numbers);
    }
  }
}
