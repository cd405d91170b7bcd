import type { Collection } from "mongodb";
import { DeadlineExceeded } from "../store/deadline.ts";
import type { AccountDoc } from "../store/documents.ts";
import { GroupCommit } from "../store/group-commit.ts";
import { canonicalNumber, type OptOutStore, optedOutAmong, optOutId } from "./list.ts";

// Grouped reads of the opt-out list for single sends: the reads asked for while others are in
// flight are issued together, as one `$in` on the `_id` index, the way the message writer groups
// the sends' writes (store/message-writer.ts). One read per send was the one database command not
// shared across sends, and half of POST /sms's cost on the test database (docs/benchmarks.md).
// A lone read is a group of one, so light load pays no wait.
//
// Most accounts' lists are empty, and then a send reads nothing: the account's list version
// (AccountDoc.optOutsVersion, raised after every addition) is probed once a minute, and a send on
// an empty list hands the version it saw to the message writer, whose debit lands only while the
// version is unchanged. A send racing an addition is told "stale" and reads the list. On a list
// with entries, a number read as not listed is remembered under the version probed before the
// read, so a repeated recipient is not read again while the list gains no entry.

/** Reads of more numbers than this (a batch's) are issued on their own, as they come. */
const GROUPED_MAX_NUMBERS = 16;
/** Keys in one grouped `$in`. */
const MAX_GROUP_KEYS = 1024;
const MAX_IN_FLIGHT = 2;
/** How long a probe's answer is used; past it the account is probed again. */
const LIST_STATE_MS = 60_000;
/** Accounts whose list state is kept (the oldest dropped first). */
const MAX_ACCOUNTS = 50_000;
/** Numbers remembered as not listed, in all accounts (all forgotten at once past it). */
const MAX_CLEAR_NUMBERS = 200_000;

/** What a probe found of an account's list: empty at `version`, or not empty. */
interface ListState {
  empty: boolean;
  version: number;
  /** Local epoch ms. */
  until: number;
  /** Numbers read as not listed after `version` was read. */
  clear: Set<string>;
}

/** A single send's check: opted out, or not (with the list version it was empty at). */
export interface SendCheck {
  optedOut: boolean;
  /** Set when the list was empty: the writer's debit holds the send to it. */
  listVersion?: number;
}

interface PendingRead {
  /** `_id` of each number asked for, to the canonical number. */
  keys: Map<string, string>;
  /** Local epoch ms past which the caller no longer waits. */
  until: number;
  resolve: (found: Set<string>) => void;
  reject: (error: unknown) => void;
}

export class OptOutReads {
  private readonly reads = new GroupCommit<PendingRead>({
    maxInFlight: MAX_IN_FLIGHT,
    groupSize: keysWithin(MAX_GROUP_KEYS),
    run: (group) => this.readGroup(group),
  });
  private lists = new Map<string, ListState>();
  private probes = new Set<string>();
  private clearNumbers = 0;

  constructor(
    private readonly store: OptOutStore,
    private readonly accounts: Collection<AccountDoc>,
  ) {}

  /** Whether `number` is on `accountId`'s list; no read at all while the list is empty. */
  async checkSend(
    accountId: string,
    number: string,
    options: { maxTimeMS: number; signal?: AbortSignal },
  ): Promise<SendCheck> {
    let state = this.lists.get(accountId);
    if (state && state.until <= Date.now()) state = undefined;
    const canonical = canonicalNumber(number);
    if (!state) this.probe(accountId);
    else if (state.empty || state.clear.has(canonical)) {
      return { optedOut: false, listVersion: state.version };
    }
    const found = await this.among(accountId, [number], options);
    if (found.size > 0) return { optedOut: true };
    // Read after the state's version was: an addition since has raised it.
    if (!state || this.lists.get(accountId) !== state) return { optedOut: false };
    if (this.clearNumbers >= MAX_CLEAR_NUMBERS) this.forgetNumbers();
    state.clear.add(canonical);
    this.clearNumbers++;
    return { optedOut: false, listVersion: state.version };
  }

  /** The writer found the list changed since it was probed: the next send probes again. */
  forget(accountId: string): void {
    this.drop(accountId);
  }

  private drop(accountId: string): void {
    const state = this.lists.get(accountId);
    if (!state) return;
    this.clearNumbers -= state.clear.size;
    this.lists.delete(accountId);
  }

  private forgetNumbers(): void {
    for (const state of this.lists.values()) state.clear.clear();
    this.clearNumbers = 0;
  }

  /**
   * The version first, then whether the list has an entry: an addition in between raises the
   * version after its entry is stored, so an empty answer is never kept under a newer version.
   */
  private probe(accountId: string): void {
    if (this.probes.has(accountId)) return;
    this.probes.add(accountId);
    const probed = async () => {
      const account = await this.accounts.findOne(
        { _id: accountId },
        { projection: { optOutsVersion: 1 }, maxTimeMS: LIST_STATE_MS },
      );
      if (!account) return;
      const entry = await this.store.optOuts.findOne(
        { accountId },
        { projection: { _id: 1 }, maxTimeMS: LIST_STATE_MS },
      );
      this.drop(accountId);
      if (this.lists.size >= MAX_ACCOUNTS) {
        const oldest = this.lists.keys().next().value;
        if (oldest !== undefined) this.drop(oldest);
      }
      this.lists.set(accountId, {
        empty: entry === null,
        version: account.optOutsVersion ?? 0,
        until: Date.now() + LIST_STATE_MS,
        clear: new Set(),
      });
    };
    // A failed probe leaves the account to the reads; the next send probes again.
    probed()
      .catch(() => undefined)
      .finally(() => this.probes.delete(accountId));
  }

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
      this.reads.push({ keys, until: Date.now() + options.maxTimeMS, resolve, reject });
    });
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

/** The waiting reads, from the first, whose keys fit within `maxKeys` (the first always goes). */
function keysWithin(maxKeys: number): (waiting: readonly PendingRead[]) => number {
  return (waiting) => {
    let count = 0;
    let keys = 0;
    for (const read of waiting) {
      if (count > 0 && keys + read.keys.size > maxKeys) break;
      count++;
      keys += read.keys.size;
    }
    return count;
  };
}
