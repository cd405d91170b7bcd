/**
 * How a handset's STOP reaches the messages delivery workers hold, on every instance, without
 * waiting for those already written to the wire (docs/design.md "Carrier-grade SMPP": "An MO is
 * never held by outbound traffic"; docs/decisions.md "Opt-out and numbers").
 *
 * A worker screens its claim against the list once, right after claiming it (rules.ts `screen`);
 * a message may then wait for room in the carrier's window, which a slow or throttling SMSC keeps
 * full. A STOP stored meanwhile must stop it, and must not wait for the window to turn over. So:
 *
 * - The STOP, once its number is on the list, is announced: one update of the feed document
 *   (collection `opt_out_stops`, `_id: "feed"`) raises `seq` and appends `{accountId, number}`
 *   to `recent` (the last KEPT_ENTRIES), atomically: entry `seq` is the array's last.
 * - Every instance that delivers runs a watcher: every `pollMs` it reads the feed when its `seq`
 *   moved (a read that finds nothing while no STOP came), keeps the new entries with their seq,
 *   and then records that it is covered up to that seq (`_id: "covered:<instanceId>"`).
 * - The worker notes the last seq seen before its screen read (`seen`), and asks `heldBack`
 *   synchronously right before a message's first part is handed to the carrier and, over SMPP,
 *   right before it is written (`submit_sm`): a message whose (account, number) came in an entry
 *   after its screen's seq is not written but given back to its queue, whose next claim's screen
 *   withdraws it. Once an instance is covered up to a STOP's seq, it writes nothing more to that
 *   number from a claim screened before the STOP.
 * - The STOP then waits only for the messages to its number claimed by instances not yet covered
 *   up to its seq (about one poll); a part already written is not waited for: it cannot be
 *   stopped. An instance that died covers nothing: its claims are waited for until their lease
 *   runs out, then withdrawn (rules.ts).
 */
import type { Collection, Db } from "mongodb";
import { canonicalNumber } from "./list.ts";

export const OPT_OUT_STOPS = "opt_out_stops";
/** Entries kept in the feed: far more than STOPs can come between two polls. */
const KEPT_ENTRIES = 1000;
/** How long a watcher keeps an entry: longer than any claim lives (a lease renewed while it runs). */
const KEEP_MS = 60 * 60_000;

/** The feed (`_id: "feed"`, with `recent`) or an instance's coverage (`covered:<id>`, with `at`). */
interface StopsDoc {
  _id: string;
  seq: number;
  recent?: { accountId: string; number: string }[];
  at?: Date;
}

const coveredId = (instanceId: string) => `covered:${instanceId}`;
const keyOf = (accountId: string, number: string) => `${accountId}/${canonicalNumber(number)}`;

/** The instance of a claim's lease owner (`<instanceId>:<counter>`, delivery-rounds.ts). */
export function instanceOfOwner(owner: string): string {
  const at = owner.lastIndexOf(":");
  return at < 0 ? owner : owner.slice(0, at);
}

export interface StopFeedOptions {
  db: Db;
  /** This instance: the owner prefix of its delivery claims. */
  instanceId: string;
  /** How often the feed is read. Default 100. */
  pollMs?: number;
  logger?: { warn(obj: unknown, msg?: string): void; error(obj: unknown, msg?: string): void };
}

export class StopFeed {
  private readonly stops: Collection<StopsDoc>;
  private readonly pollMs: number;
  /** The last seq applied; undefined until the feed was first read. */
  private lastSeen: number | undefined;
  /** The seq last recorded as this instance's coverage. */
  private coveredSeq: number | undefined;
  /** Entries seen: (account, number) to the latest seq it came with and when. */
  private readonly held = new Map<string, { seq: number; at: number }>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private running = false;

  constructor(private readonly options: StopFeedOptions) {
    this.stops = options.db.collection<StopsDoc>(OPT_OUT_STOPS);
    this.pollMs = options.pollMs ?? 100;
  }

  /** Reads the feed once (its entries become held back), then every `pollMs`. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.poll();
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.timer);
    await this.polling;
  }

  /** The last seq applied (-1 before the first read: every entry then counts as later). */
  seen = (): number => this.lastSeen ?? -1;

  /**
   * Whether a message of `accountId` to `number`, screened when `since` was the last seq seen,
   * must not be written: a STOP of that number came after its screen read.
   */
  heldBack = (accountId: string, number: string, since: number): boolean => {
    if (this.held.size === 0) return false;
    const entry = this.held.get(keyOf(accountId, number));
    return entry !== undefined && entry.seq > since;
  };

  /**
   * Announces a STOP whose number is on the list already; answers its seq. This instance holds
   * it back at once (and says so) without waiting for its next poll.
   */
  async announce(accountId: string, number: string): Promise<number> {
    const entry = { accountId, number: canonicalNumber(number) };
    const doc = (await this.stops.findOneAndUpdate(
      { _id: "feed" },
      { $inc: { seq: 1 }, $push: { recent: { $each: [entry], $slice: -KEPT_ENTRIES } } },
      { upsert: true, returnDocument: "after", projection: { seq: 1 } },
    )) as Pick<StopsDoc, "seq"> | null;
    if (!doc) throw new Error("the opt-out feed answered no document");
    if (this.running) {
      this.hold(entry.accountId, entry.number, doc.seq);
      await this.poll();
    }
    return doc.seq;
  }

  /** Those of `instances` covered up to `seq`: they write nothing screened before it. */
  async coveredAmong(instances: readonly string[], seq: number): Promise<Set<string>> {
    if (instances.length === 0) return new Set();
    const docs = await this.stops
      .find(
        { _id: { $in: instances.map(coveredId) }, seq: { $gte: seq } },
        { projection: { _id: 1 } },
      )
      .toArray();
    const ids = new Set(docs.map((d) => d._id));
    return new Set(instances.filter((i) => ids.has(coveredId(i))));
  }

  private hold(accountId: string, number: string, seq: number): void {
    const key = keyOf(accountId, number);
    const known = this.held.get(key);
    if (!known || known.seq < seq) this.held.set(key, { seq, at: Date.now() });
  }

  /** One read of the feed at a time; a poll asked for meanwhile runs after it. */
  private poll(): Promise<void> {
    const run = async (): Promise<void> => {
      await this.polling?.catch(() => undefined);
      try {
        await this.readFeed();
      } catch (error) {
        this.options.logger?.warn({ err: error }, "reading the opt-out feed failed");
      }
    };
    const polling = run();
    this.polling = polling;
    return polling.finally(() => {
      if (this.polling === polling) this.polling = undefined;
    });
  }

  private async readFeed(): Promise<void> {
    const last = this.lastSeen;
    const doc = (await this.stops.findOne(
      last === undefined ? { _id: "feed" } : { _id: "feed", seq: { $gt: last } },
    )) as StopsDoc | null;
    if (!doc) {
      this.lastSeen ??= 0;
      return this.cover();
    }
    const recent = doc.recent ?? [];
    const fresh = last === undefined ? recent.length : doc.seq - last;
    if (fresh > recent.length && last !== undefined) {
      this.options.logger?.error(
        { missed: fresh - recent.length },
        "more STOPs between two reads of the opt-out feed than it keeps",
      );
    }
    const from = Math.max(0, recent.length - fresh);
    for (let i = from; i < recent.length; i++) {
      const entry = recent[i];
      if (entry) this.hold(entry.accountId, entry.number, doc.seq - (recent.length - 1 - i));
    }
    this.prune();
    if (this.lastSeen === undefined || doc.seq > this.lastSeen) this.lastSeen = doc.seq;
    await this.cover();
  }

  /** Records what this instance holds back now, when that moved (again after a failed write). */
  private async cover(): Promise<void> {
    const seq = this.lastSeen;
    if (seq === undefined || seq === this.coveredSeq) return;
    await this.stops.updateOne(
      { _id: coveredId(this.options.instanceId) },
      { $set: { seq, at: new Date() } },
      { upsert: true },
    );
    this.coveredSeq = seq;
  }

  private prune(): void {
    const before = Date.now() - KEEP_MS;
    for (const [key, entry] of this.held) if (entry.at < before) this.held.delete(key);
  }
}
