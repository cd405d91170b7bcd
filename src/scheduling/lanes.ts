/**
 * Fair turns between accounts (docs/design.md "Scheduling: fair and prioritized"). Every account with work
 * has a lane: one small document per account and queue, holding when its earliest work is due and
 * when it was last served. Workers take turns on the due lanes least recently served first, so an
 * account with 10000 due messages gets no more turns than an account with one, on every instance
 * alike: the turn order is in the database, not in one process.
 *
 * Producers mark a lane due after writing its work (`markDue`: `$min` of the due time, and a
 * version bump). A worker that finds less work in a lane than it asked for settles the lane: idle,
 * or due at its next work's time, but only if the version is still the one read with the turn, so
 * work written meanwhile is never left without a due lane. A crash between writing work and marking
 * its lane is repaired by the queue's overdue sweep (`markDue` for accounts with overdue work).
 *
 * The cost of a claim round grows with the number of accounts that have due work (the lanes index),
 * never with the number of messages an account has queued.
 */
import type { AnyBulkWriteOperation, Collection, Filter, UpdateFilter } from "mongodb";
import { backgroundWriteOptions } from "../store/deadline.ts";
import type { LaneDoc, LaneQueue } from "../store/documents.ts";
import type { ServerClock } from "../store/server-clock.ts";

export type { LaneDoc, LaneQueue } from "../store/documents.ts";

export interface Turn {
  key: string;
  /** The lane's version when the turn was taken. */
  version: number;
}

/** The update that marks the lanes of one account due (see `markLanesDue`). */
function markUpdate(due: Partial<Record<LaneQueue, Date>>): UpdateFilter<LaneDoc> {
  const min: Record<string, Date> = {};
  const inc: Record<string, number> = {};
  for (const [queue, at] of Object.entries(due)) {
    min[`${queue}.dueAt`] = at;
    inc[`${queue}.version`] = 1;
  }
  return { $min: min, $inc: inc } as UpdateFilter<LaneDoc>;
}

/** Marks lanes due, one upsert per account: `due` maps an account to its queues' due times. */
export async function markLanesDue(
  lanes: Collection<LaneDoc>,
  due: ReadonlyMap<string, Partial<Record<LaneQueue, Date>>>,
): Promise<void> {
  const ops: AnyBulkWriteOperation<LaneDoc>[] = [];
  for (const [key, queues] of due) {
    ops.push({ updateOne: { filter: { _id: key }, update: markUpdate(queues), upsert: true } });
  }
  if (ops.length > 0) await lanes.bulkWrite(ops, { ordered: false, ...backgroundWriteOptions() });
}

/** The lanes of one queue: taking turns and settling them. */
export class FairLanes {
  constructor(
    readonly lanes: Collection<LaneDoc>,
    readonly queue: LaneQueue,
    private readonly clock: ServerClock,
  ) {}

  /** Marks the lanes of `keys` as having work due at `at` (call after the work is written). */
  async markDue(keys: Iterable<string>, at: Date): Promise<void> {
    const due = new Map<string, Partial<Record<LaneQueue, Date>>>();
    for (const key of keys) due.set(key, { [this.queue]: at });
    await markLanesDue(this.lanes, due);
  }

  /**
   * Up to `limit` due lanes, least recently served first, each stamped as served now so that the
   * next round (of any instance) serves the others first. Lanes in `skip` are left alone.
   */
  async takeTurns(limit: number, skip?: ReadonlySet<string>): Promise<Turn[]> {
    const { turns, stamped } = await this.findTurns(limit, skip);
    await stamped;
    return turns;
  }

  /**
   * `takeTurns` that does not wait for the stamp: the caller claims beside it (a round trip less
   * before a round's claims) and waits for `stamped`, or has it waited for. A round of another
   * instance that reads the lanes before the stamp lands takes the same turns, as it could between
   * the read and the stamp anyway: their claims take different messages (claims.ts).
   */
  async findTurns(
    limit: number,
    skip?: ReadonlySet<string>,
  ): Promise<{ turns: Turn[]; stamped: Promise<void> }> {
    const none = { turns: [], stamped: Promise.resolve() };
    if (limit <= 0) return none;
    const now = this.clock.now();
    const q = this.queue;
    const filter: Filter<LaneDoc> = { [`${q}.dueAt`]: { $lte: now } };
    if (skip && skip.size > 0) filter._id = { $nin: [...skip] };
    const due = await this.lanes
      .find(filter, { projection: { _id: 1, [`${q}.version`]: 1 } })
      .sort({ [`${q}.servedAt`]: 1 })
      .limit(limit)
      .toArray();
    if (due.length === 0) return none;
    const stamped = this.lanes
      .updateMany(
        { _id: { $in: due.map((lane) => lane._id) } },
        { $max: { [`${q}.servedAt`]: now } },
      )
      .then(() => undefined);
    return {
      turns: due.map((lane) => ({ key: lane._id, version: lane[q]?.version ?? 0 })),
      stamped,
    };
  }

  /**
   * The turn found less due work than it asked for: the lane is idle (or due at `nextDue`, its
   * earliest work not due yet), unless work was marked since the turn was taken.
   */
  async settle(turn: Turn, nextDue: Date | undefined): Promise<void> {
    const q = this.queue;
    await this.lanes.updateOne(
      { _id: turn.key, [`${q}.version`]: turn.version === 0 ? { $in: [0, null] } : turn.version },
      nextDue === undefined
        ? { $unset: { [`${q}.dueAt`]: "" } }
        : { $set: { [`${q}.dueAt`]: nextDue } },
    );
  }
}

/**
 * Marks lanes due for producers on the request path and in the workers, coalesced: marks made while
 * a write is running go out together in the next one (one bulkWrite, one update per account), so a
 * busy instance adds one lanes write per round trip, not one per message. A write starts one turn
 * of the event loop after the first flush asking for it, so the sends of one group commit, all
 * answered by the same database reply, mark in it together: one write per group, not one for the
 * first send and another for the rest. `flush` resolves once every mark made before it is written.
 * A failed write is reported and its marks are kept for the next one; the queues' overdue sweeps
 * repair what a crash loses.
 */
export class LaneMarker {
  /** Marks not written yet; `written` once a flush asked for them. */
  private batch: MarkBatch = { due: new Map() };
  private writing: Promise<void> | undefined;

  constructor(
    private readonly lanes: Collection<LaneDoc>,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Marks `queue`'s lane of account `key` due at `at`; written by the next flush. */
  mark(key: string, queue: LaneQueue, at: Date): void {
    const queues = this.batch.due.get(key) ?? {};
    const current = queues[queue];
    if (current === undefined || at < current) queues[queue] = at;
    this.batch.due.set(key, queues);
  }

  /** Resolves once every mark made before it is written (or failed and kept for the next write). */
  flush(): Promise<void> {
    const batch = this.batch;
    if (batch.due.size === 0) return this.writing ?? Promise.resolve();
    batch.written ??= this.write(batch);
    return batch.written;
  }

  /** Writes `batch` after the write in progress, with every mark made until it starts. */
  private async write(batch: MarkBatch): Promise<void> {
    // The other sends answered with this one reach their marks in this turn's microtasks.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.writing) await this.writing;
    if (this.batch === batch) this.batch = { due: new Map() };
    this.writing = markLanesDue(this.lanes, batch.due)
      .catch((error: unknown) => {
        for (const [key, queues] of batch.due)
          for (const [queue, at] of Object.entries(queues)) this.mark(key, queue as LaneQueue, at);
        this.onError(error);
      })
      .finally(() => {
        this.writing = undefined;
      });
    await this.writing;
  }
}

interface MarkBatch {
  due: Map<string, Partial<Record<LaneQueue, Date>>>;
  written?: Promise<void>;
}
