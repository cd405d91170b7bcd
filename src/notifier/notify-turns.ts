/**
 * Turns within an account's notify turn (docs/design.md "Status webhooks" and "Scheduling: fair and
 * prioritized"). A lane's claim took its account's due notifications in `notifyAt` order, so
 * everything the account did after a 10000-message batch (a small batch, a single send to another
 * receiver, a retry due now) waited behind that batch's 30000 notifications.
 *
 * Every message carries its group's key while a notification of it may come (`notifyGroup`,
 * domain/notify-groups.ts): its batch, or its class of single sends and its receiver, and beside
 * each a group of its retries. A turn reads, at once, the account's head (its first due
 * notifications in rank order, as before: class head starts put OTP and single sends first) and
 * its first and last group keys, and the key after each group key its last turn found. When the
 * head holds all the account's due work, or the account has one group, the head is the turn: one
 * round trip, as before. Otherwise the keys found are the account's groups (a group that came next
 * to a new one is looked for at once, a few seeks in parallel at a time), up to `MAX_KNOWN` of them
 * in rotation from the group after the one last served. Each gets its due work up to an eighth of
 * the turn (a share of a turn of `MAX_GROUPS` groups): from the head when the head holds that
 * much of it, else by one read of its own due work in due order (all reads at once). The head's
 * first group and up to `MAX_GROUPS` groups with due work are served (a group waiting for its
 * next status takes no place); what they leave of the turn goes to the head's work in rank order.
 * The claim interleaves the groups, the head's first first.
 *
 * Only the next pending notification of a message is ever due, so order per message stands; a
 * group only decides when a message's turn comes.
 */
import type { Collection, Filter } from "mongodb";
import { nextGroupKey, notifyGroupRange } from "../domain/notify-groups.ts";
import type { CandidateRead } from "../scheduling/claims.ts";
import type { MessageDoc } from "../store/documents.ts";

/** Groups served in one turn at most: an account with more has them in rotation. */
export const MAX_GROUPS = 8;
/** Group keys of an account remembered from one turn to the next at most. */
const MAX_KNOWN = 16;
/** Rounds of seeks after newly found keys in one turn at most. */
const MAX_LAYERS = 3;
/** Accounts remembered at most. */
const MAX_ACCOUNTS = 10_000;
/** The head's messages without a group (stored before groups were): served from the head only. */
const UNGROUPED = "";

interface Known {
  /** Group keys found in the account's last turn, in rotation order from `cursor`. */
  keys: string[];
  /** The last group served in the last turn that served fewer than the account has. */
  cursor?: string;
}

export class NotifyTurns {
  /** Per account: what its last turn found (an account whose turn needed no groups is forgotten). */
  private readonly known = new Map<string, Known>();

  constructor(private readonly messages: Collection<MessageDoc>) {}

  /** Whether the account's last turn was dealt between groups (it has several with due work). */
  takesTurns(account: string): boolean {
    return this.known.has(account);
  }

  /** The candidates of a turn of `account`'s notify lane, in the order they go out. */
  async candidates(account: string, read: CandidateRead): Promise<MessageDoc[]> {
    const range = notifyGroupRange(account);
    const projection = { ...read.projection, notifyGroup: 1 };
    const dueNow = { ...read.filter, notifyAt: { $lte: read.now } } as Filter<MessageDoc>;
    const before = this.known.get(account);
    const after = (key: string) => this.seek(account, nextGroupKey(key), range.to, 1);
    // The head, the first and last keys, and the key after each known one, at once: one round
    // trip finds the account's groups again, and each group that came next to a known one.
    const [head, first, last, ...successors] = await Promise.all([
      this.messages.find(dueNow, { projection }).sort({ notifyAt: 1 }).limit(read.limit).toArray(),
      this.seek(account, range.from, range.to, 1),
      this.seek(account, range.from, range.to, -1),
      ...(before?.keys ?? []).map(after),
    ]);
    if (head.length < read.limit || first === undefined || last === undefined || first === last) {
      this.known.delete(account);
      return head;
    }
    const keys = new Set<string>([first, last]);
    const asked = new Set(before?.keys ?? []);
    let fresh = successors.filter((k): k is string => k !== undefined);
    for (let layer = 0; ; layer++) {
      for (const key of fresh) keys.add(key);
      // Groups next to the newly found ones, until none is new (or enough are known).
      fresh = [...keys].filter((k) => !asked.has(k) && k !== last);
      if (layer >= MAX_LAYERS || fresh.length === 0 || keys.size >= MAX_KNOWN) break;
      for (const key of fresh) asked.add(key);
      fresh = (await Promise.all(fresh.map(after))).filter(
        (k): k is string => k !== undefined && !keys.has(k),
      );
      if (fresh.length === 0) break;
    }
    const sorted = [...keys].sort();
    const cursor = before?.cursor;
    const from =
      cursor === undefined
        ? 0
        : Math.max(
            0,
            sorted.findIndex((k) => k > cursor),
          );
    const rotated = [...sorted.slice(from), ...sorted.slice(0, from)];
    const looked = rotated.slice(0, MAX_KNOWN);

    const byGroup = new Map<string, MessageDoc[]>();
    for (const doc of head) {
      const key = doc.notifyGroup ?? UNGROUPED;
      const docs = byGroup.get(key) ?? [];
      docs.push(doc);
      byGroup.set(key, docs);
    }
    // Each group's due work, up to a group's share of a turn of MAX_GROUPS groups: from the head
    // when it holds that much, else one read (all at once). Groups with nothing due (waiting for
    // their next status) take no place in the turn.
    const share = Math.max(1, Math.ceil(read.limit / MAX_GROUPS));
    const urgent = head[0]?.notifyGroup ?? UNGROUPED;
    const candidates = [
      ...new Set([urgent, ...looked, ...(byGroup.has(UNGROUPED) ? [UNGROUPED] : [])]),
    ];
    const due = await Promise.all(
      candidates.map((group) => {
        const inHead = byGroup.get(group) ?? [];
        if (inHead.length >= share || group === UNGROUPED)
          return Promise.resolve(inHead.slice(0, share));
        return this.messages
          .find(
            {
              ...read.filter,
              notifyGroup: group,
              notifyAt: { $lte: read.now },
            } as Filter<MessageDoc>,
            { projection },
          )
          .sort({ notifyGroup: 1, notifyAt: 1 })
          .limit(share)
          .toArray();
      }),
    );
    // The head's first group, then up to MAX_GROUPS with due work in rotation.
    const served: string[] = [];
    const taken: MessageDoc[][] = [];
    let more = false;
    for (const [i, group] of candidates.entries()) {
      const docs = due[i] ?? [];
      if (docs.length === 0) continue;
      if (served.length > MAX_GROUPS && group !== UNGROUPED) {
        more = true;
        continue;
      }
      served.push(group);
      taken.push(docs);
    }
    const lastServed = served.filter((g) => g !== urgent && g !== UNGROUPED).at(-1);
    this.remember(account, {
      keys: looked,
      ...((more || rotated.length > MAX_KNOWN) &&
        lastServed !== undefined && { cursor: lastServed }),
    });
    // What the groups left of the turn: the head's work not taken yet, in rank order.
    const lists = new Map<string, MessageDoc[]>(served.map((group, i) => [group, taken[i] ?? []]));
    const chosen = new Set<number>();
    for (const docs of lists.values()) for (const doc of docs) chosen.add(doc._id);
    let left = read.limit - chosen.size;
    for (const doc of head) {
      if (left <= 0) break;
      if (chosen.has(doc._id)) continue;
      const key = doc.notifyGroup ?? UNGROUPED;
      const docs = lists.get(key) ?? [];
      docs.push(doc);
      lists.set(key, docs);
      chosen.add(doc._id);
      left--;
    }
    // At most the turn: the groups' last rounds go when they were dealt more than it holds.
    return interleave([...lists.values()]).slice(0, read.limit);
  }

  /** The first (`direction` 1) or last (-1) group key of the account in [from, to). */
  private async seek(
    account: string,
    from: string,
    to: string,
    direction: 1 | -1,
  ): Promise<string | undefined> {
    const [doc] = await this.messages
      .find({ accountId: account, notifyGroup: { $gte: from, $lt: to } } as Filter<MessageDoc>, {
        projection: { _id: 0, notifyGroup: 1 },
      })
      .sort({ notifyGroup: direction })
      .limit(1)
      .toArray();
    return doc?.notifyGroup;
  }

  private remember(account: string, known: Known): void {
    if (this.known.size >= MAX_ACCOUNTS && !this.known.has(account)) this.known.clear();
    this.known.set(account, known);
  }
}

/** The lists taking turns, one item each, in their order. */
function interleave<T>(lists: readonly T[][]): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...lists.map((l) => l.length));
  for (let i = 0; i < longest; i++)
    for (const list of lists) if (list[i] !== undefined) out.push(list[i] as T);
  return out;
}
