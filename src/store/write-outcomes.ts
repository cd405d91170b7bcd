import {
  MongoBulkWriteError,
  MongoError,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  MongoWriteConcernError,
} from "mongodb";
import { DeadlineExceeded } from "./deadline.ts";

// What a failed write says about what was stored. Only an answer of the server that names the
// documents it refused is certain; a lost connection, a timeout, an unconfirmed write concern may
// leave the write applied, or still to be applied. Such outcomes are left to the settler, which
// decides from what is stored once no write of the request can land any more.

const DUPLICATE_KEY = 11000;
const MAX_TIME_EXPIRED = 50;

/**
 * Socket errors the driver lets through unwrapped (seen: "This socket has been ended by the other
 * party", EPIPE, when the database closed a connection the driver was writing to).
 */
const SOCKET_ERRORS = new Set([
  "EPIPE",
  "ECONNRESET",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "ERR_STREAM_WRITE_AFTER_END",
  "ERR_STREAM_DESTROYED",
]);

function isSocketError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && SOCKET_ERRORS.has(code);
}

/** The database cannot be reached or did not answer in time: the request may be retried. */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof DeadlineExceeded || error instanceof OutcomeUnknown) return true;
  if (isSocketError(error)) return true;
  if (error instanceof MongoBulkWriteError)
    return writeErrorsOf(error).length === 0 || hasWriteConcernErrors(error);
  return (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoWriteConcernError ||
    (error instanceof MongoServerError && error.code === MAX_TIME_EXPIRED) ||
    (error instanceof MongoError &&
      (error.hasErrorLabel("RetryableWriteError") || error.hasErrorLabel("ResetPool")))
  );
}

/** Raised instead of a write's own error when it may have been applied. */
export class OutcomeUnknown extends Error {
  constructor(cause: unknown) {
    super("the database did not confirm the write; it is settled from what was stored", { cause });
    this.name = "OutcomeUnknown";
  }
}

/**
 * Whether a failed write may have been applied, or may still be: anything but a certain refusal
 * by the server, or an error of our own code raised with nothing of the write in flight.
 */
export function mayHaveLanded(error: unknown): boolean {
  if (error instanceof DeadlineExceeded || error instanceof OutcomeUnknown) return true;
  if (error instanceof MongoBulkWriteError) return unknownBulkOutcome(error);
  // Our ids are unique: a duplicate is the driver's retry of a write that had landed.
  if (error instanceof MongoServerError)
    return error.code === DUPLICATE_KEY || isUnavailable(error);
  return error instanceof MongoError || isSocketError(error);
}

export interface BulkOutcome {
  /** Indexes the server refused: certainly not stored. */
  refused: Set<number>;
  /** Whether every other index is certainly stored. */
  othersStored: boolean;
}

/**
 * What an unordered `insertMany` of `count` documents that threw `error` stored. Certain only when
 * the server answered for every document; a duplicate key is never taken as a refusal, since ids
 * are unique and a duplicate means a retried write that landed.
 */
export function insertOutcome(error: unknown, count: number): BulkOutcome {
  if (!(error instanceof MongoBulkWriteError) || unknownBulkOutcome(error))
    return { refused: new Set(), othersStored: false };
  const refused = new Set(writeErrorsOf(error).map((e) => e.index));
  const complete = error.result.insertedCount + refused.size === count;
  return { refused, othersStored: complete };
}

/**
 * The positions an unordered `insertMany` that threw `error` refused as duplicate keys, when the
 * server answered for every document and refused only those; undefined otherwise (the outcome
 * is unknown, or something else was refused). `insertedCount` is not compared: the emulator
 * reports every document as inserted.
 */
export function duplicateKeyIndexes(error: unknown): number[] | undefined {
  if (!(error instanceof MongoBulkWriteError) || hasWriteConcernErrors(error)) return undefined;
  const errors = writeErrorsOf(error);
  if (errors.length === 0 || errors.some((e) => e.code !== DUPLICATE_KEY)) return undefined;
  return errors.map((e) => e.index);
}

/** True when a bulk error may hide an applied write: a lost answer, an unconfirmed write concern. */
function unknownBulkOutcome(error: MongoBulkWriteError): boolean {
  const errors = writeErrorsOf(error);
  if (errors.length === 0) return true;
  if (errors.some((e) => e.code === DUPLICATE_KEY)) return true;
  return hasWriteConcernErrors(error);
}

function hasWriteConcernErrors(error: MongoBulkWriteError): boolean {
  return error.result.getWriteConcernError() !== undefined;
}

function writeErrorsOf(error: MongoBulkWriteError): { index: number; code: number }[] {
  const list: unknown = error.writeErrors;
  const errors = Array.isArray(list) ? list : list ? [list] : [];
  return errors as { index: number; code: number }[];
}
