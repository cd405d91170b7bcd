import type { CarrierPart, SubmitFailure, SubmitResult } from "../carrier.ts";

// The adapter's bookkeeping of `submit` calls (adapter.ts): a call's parts queued as jobs over the
// binds, and the error a call fails with as a whole.

/** One submit call: its parts' results, settled once all are in (or failed as a whole). */
export interface Call {
  results: SubmitResult[];
  remaining: number;
  settled: boolean;
  accepted: number;
  resolve: () => void;
  reject: (error: Error) => void;
  unboundTimer?: NodeJS.Timeout;
  /** Asked before a message's first part is written (SubmitOptions.mayWrite). */
  mayWrite?: (part: CarrierPart) => boolean;
  /** Messages a part of which was written: their other parts go too. */
  started?: Set<number>;
}

export interface Job {
  part: CarrierPart;
  call: Call;
  lost: number;
  settle: (result: SubmitResult) => void;
}

/** Thrown by `submit` when no bind is up: nothing was failed; the worker retries later. */
export class CarrierUnavailable extends Error implements SubmitFailure {
  /** The call's parts the SMSC had accepted before it failed: position to message_id. */
  acceptedParts: ReadonlyMap<number, string> = new Map();

  constructor(message: string) {
    super(message);
    this.name = "CarrierUnavailable";
  }
}
