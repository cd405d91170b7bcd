/**
 * One claim round of delivery work, fair between accounts (docs/design.md "Scheduling: fair and
 * prioritized"): turns on the due account lanes, least recently served first (lanes.ts), each an
 * equal share of the round's parts; what lanes with little work leave goes to the busier ones.
 * Within a lane, messages come in `deliveryAt` order (domain/delivery-priority.ts), and the
 * account's batches take turns (batch-turns.ts). The worker
 * decides how many parts a round may claim (its pacing) and works the claims it is handed.
 */
import type { Filter } from "mongodb";
import { BatchTurns } from "../scheduling/batch-turns.ts";
import { nextDueAt } from "../scheduling/claims.ts";
import type { FairLanes, LaneMarker, Turn } from "../scheduling/lanes.ts";
import { BatchCommits } from "../store/batch-commits.ts";
import type { Store } from "../store/database.ts";
import type { MessageDoc } from "../store/documents.ts";
import {
  type ClaimedMessage,
  claimDueDeliveries,
  DELIVERY_QUEUE,
  placeInQueue,
} from "./delivery-claims.ts";
import { releaseDeliveries } from "./delivery-queue.ts";
import { partsOf } from "./submission.ts";

/** The messages one lane's turn claimed, under one token. */
export interface LaneClaim {
  turn: Turn;
  token: string;
  messages: ClaimedMessage[];
  /** When the claim was written (server clock): its lease ends `leaseMs` after. */
  claimedAt: Date;
  /** The lane had at least the share asked for: it may have more. */
  full: boolean;
}

/**
 * Accounts whose messages are held (suspended or closed: docs/design.md "Accounts, API keys and
 * the operator console"), handed in by the root. A held lane's turn claims nothing: `heldTurn`
 * ends what must end now (a closed account's messages, those past their ttl) and says when the
 * lane is looked at again.
 */
export interface AccountHold {
  /** Whether the account is held, as the database said at most a few seconds ago. */
  held(accountId: string): Promise<boolean>;
  heldTurn(accountId: string): Promise<Date | undefined>;
}

export interface DeliveryRoundsOptions {
  store: Store;
  lanes: FairLanes;
  marks: LaneMarker;
  /** Distinguishes this instance's claim tokens from other instances'. */
  instanceId: string;
  leaseMs: number;
  /** Account lanes served per round at most. */
  lanesPerRound: number;
  /** Largest claim (parts) of one lane in one round. */
  maxClaimParts: number;
  /** Called with each claim that holds messages, as soon as it is cut to its parts. */
  onClaim: (claim: LaneClaim) => void;
  /** Runs background work (a lane's settling) that the worker's `stop` waits for. */
  track: (work: Promise<void>) => void;
  /** Further conditions on the messages claimed, asked each turn (a carrier's worker: its routes' messages). */
  filter?: () => Filter<MessageDoc>;
  /** A settled lane's earliest work is due later, at this time (a scheduled send, a hold). */
  dueLater?: (at: Date) => void;
  /** Held accounts; none when absent. */
  hold?: AccountHold;
}

export class DeliveryRounds {
  private readonly commits: BatchCommits;
  private readonly batchTurns: BatchTurns;
  /**
   * One claim of a lane at a time in this process: a round beside another (the carrier freed
   * parts meanwhile) on the same lane reads after the other's claiming update, and takes the next
   * messages, instead of reading the same ones and coming back empty (figure 6b's trace: a round of
   * 230 ms that claimed nothing).
   */
  private readonly laneClaims = new OneAtATime();
  private claimSeq = 0;

  constructor(private readonly options: DeliveryRoundsOptions) {
    this.commits = new BatchCommits(options.store.batches);
    this.batchTurns = new BatchTurns(options.store.messages, DELIVERY_QUEUE);
  }

  /** One round of `budget` parts in all; returns the parts claimed. */
  async claim(budget: number): Promise<number> {
    const { lanes, lanesPerRound, maxClaimParts } = this.options;
    // The turns' stamp is written beside the claims; the worker's `stop` waits for it, and logs
    // its failure (the lanes are then served a round out of order, nothing is lost).
    const { turns, stamped } = await lanes.findTurns(Math.min(lanesPerRound, budget));
    this.options.track(stamped);
    if (turns.length === 0) return 0;
    const share = Math.max(1, Math.min(maxClaimParts, Math.floor(budget / turns.length)));
    const claims = await Promise.all(turns.map((turn) => this.claimTurn(turn, share)));
    let parts = this.handOver(claims);
    // What lanes with little work left of the round goes to the lanes that had more, at once: a
    // busy account beside a quiet one still gets the carrier's whole rate.
    const full = claims.filter((claim) => claim.full);
    const left = budget - parts;
    if (full.length > 0 && full.length < claims.length && left >= full.length) {
      const more = Math.min(maxClaimParts, Math.floor(left / full.length));
      parts += this.handOver(await Promise.all(full.map((c) => this.claimTurn(c.turn, more))));
    }
    return parts;
  }

  /** Hands the claims with messages to the worker; returns their parts. */
  private handOver(claims: readonly LaneClaim[]): number {
    let parts = 0;
    for (const claim of claims) {
      for (const message of claim.messages) parts += partsOf(message);
      if (claim.messages.length > 0) this.options.onClaim(claim);
    }
    return parts;
  }

  private async claimTurn(turn: Turn, share: number): Promise<LaneClaim> {
    const { store, instanceId, leaseMs, hold } = this.options;
    const token = `${instanceId}:${++this.claimSeq}`;
    let claimedAt = store.clock.now();
    if (await hold?.held(turn.key)) {
      // Held: nothing claimed; the lane is looked at again later, not at every round.
      this.options.track(this.holdLane(turn, hold as AccountHold));
      return { turn, token, claimedAt, messages: [], full: false };
    }
    const messages = await this.laneClaims.inTurn(turn.key, () => {
      claimedAt = store.clock.now();
      return claimDueDeliveries(store.messages, {
        now: claimedAt,
        limit: share,
        leaseMs,
        token,
        commits: this.commits,
        filter: { ...this.options.filter?.(), accountId: turn.key },
        candidates: (read) => this.batchTurns.candidates(turn.key, read),
      });
    });
    // A lane with less work than its share is settled beside the round, not in its way.
    if (messages.length < share) this.options.track(this.settle(turn));
    return {
      turn,
      token,
      claimedAt,
      messages: await this.withinParts(messages, share),
      full: messages.length >= share,
    };
  }

  private async holdLane(turn: Turn, hold: AccountHold): Promise<void> {
    await this.options.lanes.settle(turn, await hold.heldTurn(turn.key));
  }

  private async settle(turn: Turn): Promise<void> {
    const { lanes, store } = this.options;
    const next = await nextDueAt(store.messages, DELIVERY_QUEUE, turn.key);
    await lanes.settle(turn, next);
    if (next && next.getTime() > store.clock.nowMs()) this.options.dueLater?.(next);
  }

  /**
   * The claim cut to `parts` parts (the claim counted messages, of up to 10 parts each): the rest
   * goes back at once, in its place, so the round stays within its budget. The first message
   * always goes, alone if it is larger: a share smaller than a long message (a slow carrier, many
   * lanes in a round) would otherwise never let it go, and its whole lane behind it. The worker
   * takes the excess from its next rounds (the bucket's debt, the claimed parts).
   */
  private async withinParts(messages: ClaimedMessage[], parts: number): Promise<ClaimedMessage[]> {
    const { store, marks } = this.options;
    let total = 0;
    let keep = 0;
    while (keep < messages.length) {
      const next = partsOf(messages[keep] as ClaimedMessage);
      if (total + next > parts && keep > 0) break;
      total += next;
      keep++;
    }
    const back = messages.slice(keep);
    if (back.length > 0) {
      await releaseDeliveries(
        store.messages,
        back.map((m) => ({
          id: m._id,
          dueAt: placeInQueue(m),
          unattempted: true,
        })),
      );
      for (const m of back) marks.mark(m.accountId, "delivery", store.clock.now());
      await marks.flush();
    }
    return messages.slice(0, keep);
  }
}

/** Runs the work of a key one after another, in the order asked; other keys' work alongside. */
class OneAtATime {
  private readonly tails = new Map<string, Promise<unknown>>();

  async inTurn<T>(key: string, work: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key);
    const run = (before ?? Promise.resolve()).then(work, work);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
