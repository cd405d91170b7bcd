/**
 * One claim of delivery work, worked through: expire what ran out of time, submit what is
 * ACCEPTED to the carrier and record the outcome, give back the rest. Every status change carries
 * its pending notification in the same single-document update (store/status-changes.ts).
 *
 * Crash safety: the attempt is recorded on the messages before the carrier is called (by the claim's
 * own update, see delivery-claims.ts), and the outcome right after the carrier answers. A claim may
 * be larger than the carrier's window: it streams through it, each part taking a place before it is
 * submitted and leaving it only once its outcome is recorded (submission-recorder.ts). A crash
 * therefore leaves at most the window's parts submitted and unrecorded: only those can reach the
 * carrier twice, never a whole claim. (The rest of a claim cut off by a crash carries an attempt it
 * never made; it is submitted once when claimed again.)
 */
import type { Collection } from "mongodb";
import type { DeliveryClass } from "../domain/delivery-priority.ts";
import type { Window } from "../scheduling/throttle.ts";
import type { MessageDoc } from "../store/documents.ts";
import type { ServerClock } from "../store/server-clock.ts";
import { submissionSpans } from "../tracing/work-spans.ts";
import {
  type Carrier,
  type CarrierPart,
  partsAcceptedBefore,
  type SubmitOptions,
  type SubmitResult,
} from "./carrier.ts";
import { type ClaimedMessage, placeInQueue } from "./delivery-claims.ts";
import {
  expireMessages,
  type Release,
  releaseDeliveries,
  type SubmissionOutcome,
} from "./delivery-queue.ts";
import type { SubmissionRecorder } from "./submission-recorder.ts";

/** What working a claim did, for the worker's counters and the lanes to mark (sent and send errors are counted by the recorder). */
export interface ClaimOutcome {
  expired: number;
  /** Parts submitted that an earlier (crashed) attempt may already have submitted. */
  resubmittedParts: number;
  /** Messages given back with a due time: their delivery lanes must be due by then. */
  released: { accountId: string; dueAt: Date }[];
  /** The carrier could not be reached: the worker pauses before it submits again. */
  carrierDown: boolean;
}

/** The parts of a message as the carrier takes them: its segments, or its whole text. */
export function carrierParts(message: ClaimedMessage): CarrierPart[] {
  const segments =
    message.segments && message.segments.length > 0
      ? message.segments
      : [{ id: message._id, text: message.text }];
  return segments.map((segment, partIndex) => ({
    messageId: message._id,
    partId: segment.id,
    partIndex,
    partCount: segments.length,
    to: message.to,
    from: message.from,
    text: segment.text,
    expiresAt: message.expiresAt,
  }));
}

/** Runs a claim's submissions take the window in, at least (see `submit`). */
const RUNS_PER_WINDOW = 8;
/** Parts of the longest message by default (SMS_MAX_PARTS). */
export const TYPICAL_LONGEST_MESSAGE = 10;

/** Parts a claimed message will take from the window when submitted. */
export function partsOf(message: Pick<MessageDoc, "parts" | "status">): number {
  return message.status === "ACCEPTED" ? Math.max(1, message.parts) : 0;
}

export interface SubmissionDeps {
  messages: Collection<MessageDoc>;
  carrier: Carrier;
  clock: ServerClock;
  /** Parts submitted and not yet recorded (the crash bound): the carrier's window. */
  window: Window;
  recorder: SubmissionRecorder;
  /** Told of each run of messages submitted, with the promise of their outcome's record. */
  submitting?: (messages: readonly ClaimedMessage[], recorded: Promise<void>) => void;
  /**
   * The last check before the carrier, after the claim: answers the ids of claimed messages it
   * withdrew (their recipient opted out: SEND_ERROR, refunded; opt-outs/rules.ts).
   */
  screen?: (messages: readonly ClaimedMessage[]) => Promise<ReadonlySet<number>>;
  /** STOPs that came after the screen (opt-outs/stop-feed.ts): their messages are not written. */
  stops?: StopChecks;
  /**
   * With several carriers, this carrier's name in the plan: a message it cut off after accepting
   * some of its parts stays with it (never split between carriers), and one it refused for a
   * fault of its own with no part accepted goes to the next carrier of its route.
   */
  planCarrier?: string;
  /** Told of messages this carrier answered that were meant for another (`from`, their route's first). */
  failedOver?: (from: string, messages: number) => void;
}

/**
 * The handsets' STOPs as this instance has seen them (opt-outs/stop-feed.ts). The screen runs once
 * per claim; a message then waits for the window, and a STOP stored meanwhile must keep it off
 * the wire without waiting for the window (docs/design.md "Carrier-grade SMPP").
 */
export interface StopChecks {
  /** The last STOP seen; read right before the screen's read of the list. */
  seen(): number;
  /** Whether a STOP of `number` to `accountId` came after `since`: its message is not written. */
  heldBack(accountId: string, number: string, since: number): boolean;
}

/** How a message goes back to the queue besides its due time (Release's options). */
type BackOptions = Pick<Release, "pinTo" | "leave">;

export async function workClaim(
  deps: SubmissionDeps,
  claim: { token: string; messages: ClaimedMessage[]; now: Date },
  logger: { warn(obj: unknown, msg?: string): void },
): Promise<ClaimOutcome> {
  const { now } = claim;
  const outcome: ClaimOutcome = {
    expired: 0,
    resubmittedParts: 0,
    released: [],
    carrierDown: false,
  };
  const releases: Release[] = [];
  const release = (
    message: ClaimedMessage,
    dueAt?: Date,
    attempted = false,
    options?: BackOptions,
  ) => {
    const r: Release = dueAt === undefined ? { id: message._id } : { id: message._id, dueAt };
    if (!attempted) r.unattempted = true;
    if (options) Object.assign(r, options);
    releases.push(r);
    if (dueAt !== undefined) outcome.released.push({ accountId: message.accountId, dueAt });
  };
  const toExpire: number[] = [];
  const toSubmit: ClaimedMessage[] = [];
  for (const message of claim.messages) {
    const live = message.status === "ACCEPTED" || message.status === "SENT";
    if (!live) release(message);
    else if (message.expiresAt.getTime() <= now.getTime()) toExpire.push(message._id);
    else if (message.status === "ACCEPTED") toSubmit.push(message);
    else release(message, message.expiresAt);
  }
  if (toExpire.length > 0) {
    const classes = classesOf(claim.messages);
    outcome.expired = await expireMessages(deps.messages, toExpire, now, classes);
  }
  // The STOPs seen before the screen reads the list: any later one may have been missed by it.
  const seen = deps.stops?.seen();
  const withdrawn = toSubmit.length > 0 && deps.screen ? await deps.screen(toSubmit) : undefined;
  const submitting = withdrawn?.size ? toSubmit.filter((m) => !withdrawn.has(m._id)) : toSubmit;
  const mayGo = mayGoAfter(deps.stops, seen);
  if (submitting.length > 0) await submit(deps, submitting, outcome, release, logger, mayGo);
  await releaseDeliveries(deps.messages, releases);
  return outcome;
}

async function submit(
  deps: SubmissionDeps,
  messages: ClaimedMessage[],
  outcome: ClaimOutcome,
  release: (
    message: ClaimedMessage,
    dueAt: Date,
    attempted: boolean,
    options?: BackOptions,
  ) => void,
  logger: { warn(obj: unknown, msg?: string): void },
  mayGo?: MayGo,
): Promise<void> {
  // This claim counted one attempt; more means an earlier claim was cut off (a crash or a lost
  // lease) and may have reached the carrier with these parts.
  for (const message of messages)
    if ((message.submitAttempts ?? 0) > 1) outcome.resubmittedParts += Math.max(1, message.parts);
  const giveBack: GiveBack = (message, attempted, options) =>
    release(message, placeInQueue(message), attempted, options);
  // The claim streams through the window: each run of messages goes as soon as its parts fit, and
  // their parts leave the window once their outcome is recorded. Runs of an eighth of the window at
  // most, and the claims that have had fewest runs go first: the window turns over run by run, so
  // a newly claimed account or batch goes with the next run that is recorded, not behind the runs
  // of the claims that came before it.
  const runLimit = Math.max(TYPICAL_LONGEST_MESSAGE, Math.ceil(deps.window.size / RUNS_PER_WINDOW));
  const groups: Promise<void>[] = [];
  let next = 0;
  while (next < messages.length) {
    const first = messages[next] as ClaimedMessage;
    let taken = partsOf(first);
    await deps.window.acquire(taken, groups.length);
    if (outcome.carrierDown) {
      // Not submitted: back in place, their attempt taken back.
      deps.window.give(taken);
      for (const message of messages.slice(next)) giveBack(message, false);
      break;
    }
    const group = [first];
    for (next++; next < messages.length; next++) {
      const parts = partsOf(messages[next] as ClaimedMessage);
      if (parts > deps.window.free || taken + parts > runLimit) break;
      deps.window.take(parts);
      taken += parts;
      group.push(messages[next] as ClaimedMessage);
    }
    const recorded = submitGroup(deps, group, outcome, giveBack, logger, mayGo);
    deps.submitting?.(group, recorded);
    groups.push(recorded.finally(() => deps.window.give(taken)));
  }
  // Every run settles before the claim does (its window places and leases are still held).
  const failed = (await Promise.allSettled(groups)).find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}

/** Puts a claimed message back in its place in the queue. */
type GiveBack = (message: ClaimedMessage, attempted: boolean, options?: BackOptions) => void;

/** Whether a claimed message may still be written (no STOP of its recipient since its screen). */
type MayGo = (message: Pick<ClaimedMessage, "accountId" | "to" | "keywordReply">) => boolean;

function mayGoAfter(stops: StopChecks | undefined, seen: number | undefined): MayGo | undefined {
  if (!stops || seen === undefined) return undefined;
  // A reply to an opt-out word confirms the block it passes: never held back.
  return (m) => m.keywordReply !== undefined || !stops.heldBack(m.accountId, m.to, seen);
}

/** Submits one run of messages and records the carrier's answers. */
async function submitGroup(
  deps: SubmissionDeps,
  run: ClaimedMessage[],
  outcome: ClaimOutcome,
  giveBack: GiveBack,
  logger: { warn(obj: unknown, msg?: string): void },
  mayGo?: MayGo,
): Promise<void> {
  // The last moment before the carrier: a message whose recipient sent STOP since its screen
  // goes back to its queue unwritten, where the next claim's screen withdraws it.
  let messages = run;
  let options: SubmitOptions | undefined;
  if (mayGo) {
    messages = run.filter(mayGo);
    for (const message of run) if (!messages.includes(message)) giveBack(message, false);
    if (messages.length === 0) return;
    const byId = new Map(messages.map((m) => [m._id, m]));
    options = {
      mayWrite: (part) => {
        const message = byId.get(part.messageId);
        return message === undefined || mayGo(message);
      },
    };
  }
  const parts = messages.flatMap(carrierParts);
  // Spans in each message's own trace (none when tracing is off).
  const spans = submissionSpans(deps.carrier.name, messages);
  let results: SubmitResult[];
  try {
    results = await (options ? deps.carrier.submit(parts, options) : deps.carrier.submit(parts));
    if (results.length !== parts.length) {
      throw new Error(`carrier answered ${results.length} results for ${parts.length} parts`);
    }
  } catch (error) {
    // Not failed: the messages keep their place in their account's queue and wait for the carrier.
    logger.warn({ err: error, count: messages.length }, "carrier submit failed; retrying later");
    outcome.carrierDown = true;
    spans?.failed(error);
    await cutOff(deps, messages, parts, partsAcceptedBefore(error), outcome, giveBack);
    return;
  }
  const perMessage = new Map<number, Answered>();
  parts.forEach((part, i) => {
    const result = results[i];
    const entry = perMessage.get(part.messageId) ?? { carrierIds: [], carrierFault: true };
    if (result?.ok) entry.carrierIds.push(result.carrierId);
    else if (result?.heldBack) entry.heldBack = true;
    else {
      entry.error ??= result?.error ?? "no result";
      if (!result?.carrierFault) entry.carrierFault = false;
    }
    perMessage.set(part.messageId, entry);
  });
  spans?.answered((id) => perMessage.get(id)?.error);
  countFailovers(deps, messages);
  const recorded = messages.filter((message) => {
    const answered = perMessage.get(message._id);
    if (answered?.heldBack && answered.carrierIds.length === 0 && answered.error === undefined) {
      // Not written (a STOP came since its screen): back in its place, its attempt taken back.
      giveBack(message, false);
      return false;
    }
    const leave = movesOn(deps.planCarrier, message, perMessage.get(message._id));
    // Not recorded: back in its place, its attempt taken back, for the next carrier of its route.
    if (leave) giveBack(message, false, { leave });
    return leave === undefined;
  });
  const outcomes: SubmissionOutcome[] = recorded.map((message) => {
    const entry = perMessage.get(message._id) ?? { carrierIds: [], error: "no result" };
    const submission: SubmissionOutcome = {
      id: message._id,
      carrierIds: entry.carrierIds,
      expiresAt: message.expiresAt,
    };
    if (message.deliveryClass) submission.deliveryClass = message.deliveryClass;
    if (entry.error !== undefined) submission.error = entry.error;
    return submission;
  });
  await deps.recorder.record(outcomes);
  // A SENT message is due again at its expiry, which may come before its lane's next turn.
  for (const message of recorded)
    if (perMessage.get(message._id)?.error === undefined)
      outcome.released.push({ accountId: message.accountId, dueAt: message.expiresAt });
}

/**
 * The messages of a submit call cut off by the carrier's failure go back to the queue. With several
 * carriers, what the carrier accepted stays its own: a message all of whose parts it accepted is
 * recorded SENT (its receipt may still come), one it accepted some parts of goes back kept for it
 * (`carrier`: never split between carriers). With one carrier all go back, to the same SMSC.
 */
async function cutOff(
  deps: SubmissionDeps,
  messages: readonly ClaimedMessage[],
  parts: readonly CarrierPart[],
  accepted: ReadonlyMap<number, string>,
  outcome: ClaimOutcome,
  giveBack: GiveBack,
): Promise<void> {
  const carrier = deps.planCarrier;
  const byMessage = new Map<number, { parts: number; carrierIds: string[] }>();
  parts.forEach((part, i) => {
    const entry = byMessage.get(part.messageId) ?? { parts: 0, carrierIds: [] };
    entry.parts++;
    const carrierId = accepted.get(i);
    if (carrierId !== undefined) entry.carrierIds.push(carrierId);
    byMessage.set(part.messageId, entry);
  });
  const sent: ClaimedMessage[] = [];
  for (const message of messages) {
    const entry = byMessage.get(message._id);
    const taken = carrier === undefined ? 0 : (entry?.carrierIds.length ?? 0);
    if (taken > 0 && taken === entry?.parts) sent.push(message);
    else
      giveBack(message, true, taken > 0 && carrier !== undefined ? { pinTo: carrier } : undefined);
  }
  if (sent.length === 0) return;
  await deps.recorder.record(
    sent.map((message) => ({
      id: message._id,
      carrierIds: byMessage.get(message._id)?.carrierIds ?? [],
      expiresAt: message.expiresAt,
      ...(message.deliveryClass && { deliveryClass: message.deliveryClass }),
    })),
  );
  for (const message of sent)
    outcome.released.push({ accountId: message.accountId, dueAt: message.expiresAt });
}

/** A message's answers from the carrier: ids of the parts accepted, the first refusal. */
export interface Answered {
  carrierIds: string[];
  error?: string;
  /** Every refusal blamed the carrier itself (SubmitResult.carrierFault). */
  carrierFault: boolean;
  /** Some part was held back unwritten (SubmitResult.heldBack). */
  heldBack?: boolean;
}

/**
 * The carrier a message leaves (this one) when it refused it for a fault of its own, accepted
 * none of its parts (now or in a submission cut off earlier: then `message.carrier` keeps it
 * here), and its route has another carrier; else undefined (the answer is recorded).
 */
export function movesOn(
  carrier: string | undefined,
  message: Pick<ClaimedMessage, "route" | "carrier">,
  answered: Answered | undefined,
): string | undefined {
  if (carrier === undefined || answered?.error === undefined) return undefined;
  if (!answered.carrierFault || answered.carrierIds.length > 0) return undefined;
  if (message.carrier !== undefined) return undefined;
  const others = message.route?.carriers.some((c) => c !== carrier) ?? false;
  return others ? carrier : undefined;
}

/** Counts the messages this carrier answered that their route meant for another one first. */
function countFailovers(deps: SubmissionDeps, messages: readonly ClaimedMessage[]): void {
  const carrier = deps.planCarrier;
  if (carrier === undefined || !deps.failedOver) return;
  const moved = new Map<string, number>();
  for (const { route } of messages) {
    const first = route?.refusedBy?.[0] ?? route?.carriers[0];
    if (first !== undefined && first !== carrier) moved.set(first, (moved.get(first) ?? 0) + 1);
  }
  for (const [from, count] of moved) deps.failedOver(from, count);
}

/** The classes of claimed messages, which rank their notifications. */
function classesOf(messages: readonly ClaimedMessage[]): Map<number, DeliveryClass> {
  const classes = new Map<number, DeliveryClass>();
  for (const m of messages) if (m.deliveryClass) classes.set(m._id, m.deliveryClass);
  return classes;
}
