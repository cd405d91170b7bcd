/**
 * Turns between an account's batches (docs/design.md "Scheduling: fair and prioritized": within the batch
 * class, an account's active batches take turns). A lane's claim takes its account's due work in
 * `deliveryAt` order, and every message of a batch has the same `deliveryAt` (the batch's accept
 * time, less its class's head start: domain/delivery-priority.ts). Without turns a batch sent after
 * a 10000-message batch of the same account waits behind all of it.
 *
 * Each distinct due rank is a group: a batch (or one message that was due long enough to come
 * after one). When a turn's first read ends inside a batch, the account's further due groups are
 * found one index seek each (the next rank after the last one found, on the account's due index)
 * and the rest of the turn's share is dealt between them and that batch, round robin from the group
 * after the one that was dealt last (per account, in this process); what a group has not got goes
 * to that batch, which was read far enough already. The claim interleaves the groups, so each gets
 * its parts to the carrier in the same stretch of time. Work before that batch in the order (OTP,
 * single sends, older work) keeps its place ahead of all of them.
 *
 * A turn's extra cost is one read beside its head: the account's latest due messages (at most
 * `TAIL_READ`). When two or more groups are due and that read reaches down to the open batch (a
 * small batch after a big one), the turn has every group between and their messages: two reads in
 * all. Otherwise, one seek per further group (at most `MAX_GROUPS` per turn) and one read per group
 * served that the latest messages do not hold whole; the latest group's read goes beside the seeks.
 */
import type { Collection, Filter } from "mongodb";
import type { MessageDoc } from "../store/documents.ts";
import type { CandidateRead, WorkQueue } from "./claims.ts";

/** Groups served in one turn at most: an account with more takes them in rotation. */
const MAX_GROUPS = 8;
/**
 * The account's latest due messages read beside a turn's head, at most (and at most half the
 * turn): a batch sent after a big one is usually small, and then the turn has every group it deals
 * between in two reads.
 */
const TAIL_READ = 16;
/** Accounts whose rotation is remembered at most (a turn without groups forgets its account). */
const MAX_CURSORS = 10_000;

export class BatchTurns {
  /** Per account: the rank (ms) of the group that was dealt the last slot of its last turn. */
  private readonly cursors = new Map<string, number>();

  constructor(
    private readonly messages: Collection<MessageDoc>,
    private readonly queue: Pick<WorkQueue, "due">,
  ) {}

  /** The candidates of a turn of `account`'s lane, in the order they go to the carrier. */
  async candidates(account: string, read: CandidateRead): Promise<MessageDoc[]> {
    const due = this.queue.due;
    const dueNow = { ...read.filter, [due]: { $lte: read.now } } as Filter<MessageDoc>;
    // The account's latest due messages are read beside its head: they name the latest group, and
    // when they reach down to the head's open batch (a small batch after a big one), every group
    // between and its messages, so the turn needs no seek and no further read.
    const [head, tailDesc] = await Promise.all([
      this.messages
        .find(dueNow, { projection: read.projection })
        .sort({ [due]: 1 })
        .limit(read.limit)
        .toArray(),
      this.messages
        .find(dueNow, { projection: read.projection })
        .sort({ [due]: -1 })
        .limit(Math.min(TAIL_READ, Math.ceil(read.limit / 2)))
        .toArray(),
    ]);
    const last = head.at(-1);
    const openRank = last?.[due]?.getTime();
    const latest = tailDesc[0]?.[due]?.getTime();
    if (
      head.length < read.limit ||
      last?.batchId === undefined ||
      openRank === undefined ||
      latest === undefined ||
      latest <= openRank
    ) {
      this.cursors.delete(account);
      return head;
    }
    const openFrom = head.findIndex((doc) => doc[due]?.getTime() === openRank);
    const prefix = head.slice(0, openFrom);
    const open = head.slice(openFrom);
    const cursor = this.cursors.get(account);
    const slots = read.limit - prefix.length;
    // Taken apart only once the turn has groups to deal between.
    const tail = new Tail(tailDesc, due);
    const reached = tail.reaches(openRank);
    const groupOf = (rank: number, limit: number): Promise<MessageDoc[]> =>
      tail.holdsAll(rank, reached)
        ? Promise.resolve(tail.group(rank, limit))
        : this.messages
            .find({ ...read.filter, [due]: new Date(rank) } as Filter<MessageDoc>, {
              projection: read.projection,
            })
            .limit(limit)
            .toArray();
    // The latest group is always one of those served (the seeks below end at it) unless the
    // account has more groups than a turn takes: read beside the seeks, up to the most a group can
    // get (half the slots, with two groups). Its failure surfaces where it is used.
    const latestGroup = groupOf(latest, Math.ceil(slots / 2));
    latestGroup.catch(() => undefined);
    const seek = reached
      ? (after: number, upTo: number) => Promise.resolve(tail.rankAfter(after, upTo))
      : (after: number, upTo: number) => this.rankAfter(read.filter, after, new Date(upTo));
    const ranks = [openRank, ...(await furtherRanks(seek, openRank, latest, cursor))];
    const start = Math.max(0, cursor === undefined ? 0 : ranks.findIndex((r) => r > cursor));
    const shares = ranks.map(() => 0);
    for (let slot = 0; slot < slots; slot++) {
      const group = (start + slot) % ranks.length;
      shares[group] = (shares[group] ?? 0) + 1;
      if (slot === slots - 1) this.remember(account, ranks[group] as number);
    }
    const further = await Promise.all(
      ranks.slice(1).map((rank, i) => {
        const share = shares[i + 1] ?? 0;
        if (share === 0) return Promise.resolve([]);
        if (rank === latest) return latestGroup.then((docs) => docs.slice(0, share));
        return groupOf(rank, share);
      }),
    );
    const taken = further.reduce((sum, docs) => sum + docs.length, 0);
    const groups = [open.slice(0, slots - taken), ...further];
    return [...prefix, ...interleave(groups, start)];
  }

  /** The first due rank after `after` (exclusive) and up to `upTo`; undefined when there is none. */
  private async rankAfter(
    filter: Filter<MessageDoc>,
    after: number,
    upTo: Date,
  ): Promise<number | undefined> {
    const due = this.queue.due;
    const [doc] = await this.messages
      .find({ ...filter, [due]: { $gt: new Date(after), $lte: upTo } } as Filter<MessageDoc>, {
        projection: { _id: 0, [due]: 1 },
      })
      .sort({ [due]: 1 })
      .limit(1)
      .toArray();
    return doc?.[due]?.getTime();
  }

  private remember(account: string, rank: number): void {
    if (this.cursors.size >= MAX_CURSORS && !this.cursors.has(account)) this.cursors.clear();
    this.cursors.set(account, rank);
  }
}

/** The first rank after `after` (exclusive) and up to `upTo` (inclusive), if any. */
type RankSeek = (after: number, upTo: number) => Promise<number | undefined>;

/**
 * Due ranks after `openRank` up to `latest`, at most MAX_GROUPS - 1, the first after `cursor`
 * (wrapping round to just after `openRank`): an account with more groups than a turn serves has
 * them served in rotation. Ascending.
 */
async function furtherRanks(
  seek: RankSeek,
  openRank: number,
  latest: number,
  cursor: number | undefined,
): Promise<number[]> {
  const found: number[] = [];
  const fromCursor = cursor !== undefined && cursor > openRank && cursor < latest;
  // First the ranks after the cursor, then (wrapped) those between the open rank and it.
  const stretches: [number, number][] = fromCursor
    ? [
        [cursor, latest],
        [openRank, cursor],
      ]
    : [[openRank, latest]];
  for (const [after, upTo] of stretches) {
    let from = after;
    while (found.length < MAX_GROUPS - 1) {
      const next = await seek(from, upTo);
      if (next === undefined) break;
      found.push(next);
      from = next;
      if (next >= upTo) break;
    }
  }
  return found.sort((a, b) => a - b);
}

/**
 * The account's latest due messages, read latest first: the groups it holds whole (every group
 * above its lowest rank; every group, once it reaches down to the open batch).
 */
class Tail {
  private readonly byRank = new Map<number, MessageDoc[]>();
  /** Ascending. */
  private readonly ranks: number[];
  private readonly lowest: number | undefined;

  constructor(latestFirst: readonly MessageDoc[], due: WorkQueue["due"]) {
    for (const doc of latestFirst) {
      const rank = doc[due]?.getTime();
      if (rank === undefined) continue;
      const group = this.byRank.get(rank) ?? [];
      group.push(doc);
      this.byRank.set(rank, group);
    }
    // A group's messages in their own order (as the head's read gives them), not reversed.
    for (const group of this.byRank.values()) group.sort((a, b) => a._id - b._id);
    this.ranks = [...this.byRank.keys()].sort((a, b) => a - b);
    this.lowest = this.ranks[0];
  }

  /** Whether the read reached `rank`: every group above it is in the tail, whole. */
  reaches(rank: number): boolean {
    return this.lowest !== undefined && this.lowest <= rank;
  }

  /** Whether the tail holds every message of group `rank` (`reached`: it reaches the open batch). */
  holdsAll(rank: number, reached: boolean): boolean {
    return this.byRank.has(rank) && (reached || (this.lowest !== undefined && rank > this.lowest));
  }

  group(rank: number, limit: number): MessageDoc[] {
    return (this.byRank.get(rank) ?? []).slice(0, limit);
  }

  /** The tail's first rank after `after` and up to `upTo` (a seek, once it reached the open batch). */
  rankAfter(after: number, upTo: number): number | undefined {
    return this.ranks.find((rank) => rank > after && rank <= upTo);
  }
}

/** The groups' messages taking turns, one each, from group `start` on. */
function interleave<T>(groups: readonly T[][], start: number): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...groups.map((g) => g.length));
  for (let i = 0; i < longest; i++) {
    for (let k = 0; k < groups.length; k++) {
      const item = groups[(start + k) % groups.length]?.[i];
      if (item !== undefined) out.push(item);
    }
  }
  return out;
}
