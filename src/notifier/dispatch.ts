/**
 * The in-process queues between claimed notifications and requests (docs/design.md "Scheduling: fair and
 * prioritized"). Requests in flight are bounded three ways: over all receivers (`concurrency`),
 * per receiver (`receiverConcurrency`: scheme, host, port and path) and per account
 * (`accountConcurrency`). Free slots go round robin between the accounts with waiting work, and
 * within an account round robin between its receivers, so an account with a long queue does not
 * push others back, and a receiver that hangs holds only its own slots: everything else passes it.
 *
 * Work for a saturated receiver (all its slots busy) waits here, its claim kept alive, but only
 * so much: beyond `receiverQueueLimit` waiting tasks (the newest of the account with most of them
 * go), or after waiting `receiverWaitMs`, a task is handed back (`putBack`) to go to the database
 * with a short deferral, freeing its account's claim capacity for its other receivers.
 */

export interface DispatchTask {
  accountId: string;
  /** `receiverKey` of the request's URL. */
  receiver: string;
}

export interface DispatchLimits {
  concurrency: number;
  receiverConcurrency: number;
  accountConcurrency: number;
  /** Tasks waiting for one saturated receiver at most (over all accounts). */
  receiverQueueLimit: number;
  /** How long a task may wait for a saturated receiver before it is handed back. */
  receiverWaitMs: number;
}

export interface DispatchHandlers<T> {
  /** Runs one request; its slot is taken until the promise settles. */
  run: (task: T) => Promise<void>;
  /** A task that will not run here (see the file's comment). */
  putBack: (task: T) => void;
  /** Local clock for waiting times (tests may replace it). */
  now?: () => number;
}

interface Waiting<T> {
  task: T;
  since: number;
}

/** One account's waiting tasks, by receiver, served round robin. */
interface AccountQueues<T> {
  active: number;
  queued: number;
  byReceiver: Map<string, Waiting<T>[]>;
  /** Receivers with waiting tasks, in round-robin order; `cursor` is the next one to look at. */
  order: string[];
  cursor: number;
}

interface ReceiverState {
  active: number;
  queued: number;
  /** Accounts with tasks waiting for this receiver. */
  accounts: Set<string>;
}

export class FairDispatcher<T extends DispatchTask> {
  private readonly accounts = new Map<string, AccountQueues<T>>();
  private readonly receivers = new Map<string, ReceiverState>();
  /**
   * Accounts with waiting tasks, round robin; `cursor` is the next one to serve. An account whose
   * queue emptied is dropped from it when `pump` comes to it.
   */
  private readonly ring: string[] = [];
  private readonly inRing = new Set<string>();
  private cursor = 0;
  private activeCount = 0;
  private queuedCount = 0;
  private readonly running = new Set<Promise<void>>();
  private readonly now: () => number;

  constructor(
    private readonly limits: DispatchLimits,
    private readonly handlers: DispatchHandlers<T>,
  ) {
    this.now = handlers.now ?? Date.now;
  }

  /** Requests in flight. */
  get active(): number {
    return this.activeCount;
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    return this.queuedCount;
  }

  /** Requests in flight for an account (0 when unknown). */
  activeFor(accountId: string): number {
    return this.accounts.get(accountId)?.active ?? 0;
  }

  /** Requests in flight to a receiver (0 when unknown). */
  activeAt(receiver: string): number {
    return this.receivers.get(receiver)?.active ?? 0;
  }

  /** Queues a task; `pump` starts what may start. */
  push(task: T): void {
    const account = this.account(task.accountId);
    const receiver = this.receiver(task.receiver);
    let waiting = account.byReceiver.get(task.receiver);
    if (!waiting) {
      waiting = [];
      account.byReceiver.set(task.receiver, waiting);
      account.order.push(task.receiver);
    }
    if (!this.inRing.has(task.accountId)) {
      this.inRing.add(task.accountId);
      this.ring.push(task.accountId);
    }
    waiting.push({ task, since: this.now() });
    account.queued++;
    receiver.queued++;
    receiver.accounts.add(task.accountId);
    this.queuedCount++;
  }

  /** Starts waiting tasks while slots are free, then trims the queues of saturated receivers. */
  pump(): void {
    while (this.activeCount < this.limits.concurrency && this.ring.length > 0) {
      // One pass over the accounts, at most one start each; stop when a pass starts nothing.
      let started = false;
      for (let seen = this.ring.length; seen > 0 && this.ring.length > 0; seen--) {
        if (this.activeCount >= this.limits.concurrency) break;
        if (this.cursor >= this.ring.length) this.cursor = 0;
        const accountId = this.ring[this.cursor] as string;
        const account = this.accounts.get(accountId);
        const task = account && account.queued > 0 ? this.takeNext(account) : undefined;
        if (!account || account.queued === 0) {
          this.ring.splice(this.cursor, 1); // the cursor now points at the next account
          this.inRing.delete(accountId);
        } else {
          this.cursor++;
        }
        if (task) {
          this.start(task);
          started = true;
        }
      }
      if (!started) break;
    }
    this.trim();
  }

  /** Hands back the tasks that waited longer than `receiverWaitMs` for a saturated receiver. */
  expire(): void {
    const cutoff = this.now() - this.limits.receiverWaitMs;
    for (const [key, receiver] of this.receivers) {
      if (receiver.queued === 0 || receiver.active < this.limits.receiverConcurrency) continue;
      for (const accountId of [...receiver.accounts]) {
        const waiting = this.accounts.get(accountId)?.byReceiver.get(key);
        if (!waiting) continue;
        let old = 0;
        while (old < waiting.length && (waiting[old] as Waiting<T>).since <= cutoff) old++;
        for (const entry of this.remove(accountId, key, 0, old)) this.handlers.putBack(entry.task);
      }
    }
  }

  /** Removes and returns every waiting task (on stop). */
  drain(): T[] {
    const tasks: T[] = [];
    for (const [accountId, account] of [...this.accounts]) {
      for (const [key, waiting] of [...account.byReceiver]) {
        for (const entry of this.remove(accountId, key, 0, waiting.length)) tasks.push(entry.task);
      }
    }
    return tasks;
  }

  /** Resolves when no request is in flight. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private start(task: T): void {
    const account = this.account(task.accountId);
    const receiver = this.receiver(task.receiver);
    account.active++;
    receiver.active++;
    this.activeCount++;
    let running: Promise<void>;
    try {
      running = this.handlers.run(task);
    } catch (error) {
      running = Promise.reject(error);
    }
    const run = running
      .catch(() => undefined)
      .finally(() => {
        account.active--;
        receiver.active--;
        this.activeCount--;
        this.running.delete(run);
        this.forget(task.accountId, task.receiver);
        this.pump();
      });
    this.running.add(run);
  }

  /** The account's next task to a receiver with a free slot, receivers taken round robin. */
  private takeNext(account: AccountQueues<T>): T | undefined {
    if (account.active >= this.limits.accountConcurrency) return undefined;
    for (let seen = account.order.length; seen > 0; seen--) {
      if (account.cursor >= account.order.length) account.cursor = 0;
      const key = account.order[account.cursor] as string;
      account.cursor++;
      const receiver = this.receivers.get(key);
      if (receiver && receiver.active >= this.limits.receiverConcurrency) continue;
      const waiting = account.byReceiver.get(key);
      const entry = waiting?.[0];
      if (!entry) continue;
      const [taken] = this.remove(entry.task.accountId, key, 0, 1);
      return taken?.task;
    }
    return undefined;
  }

  /** Over-long queues of saturated receivers: the newest tasks of the longest account queue go back. */
  private trim(): void {
    for (const [key, receiver] of this.receivers) {
      if (receiver.queued <= this.limits.receiverQueueLimit) continue;
      if (receiver.active < this.limits.receiverConcurrency) continue;
      while (receiver.queued > this.limits.receiverQueueLimit) {
        let longest: string | undefined;
        let length = 0;
        for (const accountId of receiver.accounts) {
          const n = this.accounts.get(accountId)?.byReceiver.get(key)?.length ?? 0;
          if (n > length) {
            longest = accountId;
            length = n;
          }
        }
        if (longest === undefined) break;
        const excess = Math.min(receiver.queued - this.limits.receiverQueueLimit, length);
        const removed = this.remove(longest, key, length - excess, excess);
        for (const entry of removed) this.handlers.putBack(entry.task);
      }
    }
  }

  /** Takes `count` waiting tasks from `from` in an account's queue for a receiver, keeping the counts. */
  private remove(accountId: string, key: string, from: number, count: number): Waiting<T>[] {
    const account = this.accounts.get(accountId);
    const waiting = account?.byReceiver.get(key);
    const receiver = this.receivers.get(key);
    if (!account || !waiting || !receiver || count <= 0) return [];
    const removed = waiting.splice(from, count);
    account.queued -= removed.length;
    receiver.queued -= removed.length;
    this.queuedCount -= removed.length;
    if (waiting.length === 0) {
      account.byReceiver.delete(key);
      const at = account.order.indexOf(key);
      if (at >= 0) {
        account.order.splice(at, 1);
        if (account.cursor > at) account.cursor--;
      }
      receiver.accounts.delete(accountId);
    }
    this.forget(accountId, key);
    return removed;
  }

  private account(accountId: string): AccountQueues<T> {
    let account = this.accounts.get(accountId);
    if (!account) {
      account = { active: 0, queued: 0, byReceiver: new Map(), order: [], cursor: 0 };
      this.accounts.set(accountId, account);
    }
    return account;
  }

  private receiver(key: string): ReceiverState {
    let receiver = this.receivers.get(key);
    if (!receiver) {
      receiver = { active: 0, queued: 0, accounts: new Set() };
      this.receivers.set(key, receiver);
    }
    return receiver;
  }

  /** Drops the bookkeeping of an account and a receiver once nothing is left of them. */
  private forget(accountId: string, key: string): void {
    const account = this.accounts.get(accountId);
    if (account && account.active === 0 && account.queued === 0) this.accounts.delete(accountId);
    const receiver = this.receivers.get(key);
    if (receiver && receiver.active === 0 && receiver.queued === 0) this.receivers.delete(key);
  }
}
