import { Code, type ConnectError } from "@connectrpc/connect";
import { fieldErrors } from "../errors/api-errors.ts";

// Bodies over 1 MiB (only POST /sms-batch and SendBatch take them) cost up to a few hundred MB and
// a parse off the main thread each: few may be read at once, per client address and in all. A
// body over a bound is refused before any of it is read (from its Content-Length, or once an
// undeclared body grows past 1 MiB): RESOURCE_EXHAUSTED (429) when the address has its share,
// UNAVAILABLE (503) when the instance has; Retry-After 1 either way, the bodies in flight finish
// in about that time.

/** A body larger than this takes a slot. */
export const LARGE_BODY_BYTES = 1024 * 1024;

export interface LargeBodyBounds {
  perAddress: number;
  total: number;
}

export const LARGE_BODY_BOUNDS: LargeBodyBounds = { perAddress: 2, total: 4 };

export class LargeBodySlots {
  private readonly byAddress = new Map<string, number>();
  private taken = 0;

  constructor(readonly bounds: LargeBodyBounds = LARGE_BODY_BOUNDS) {}

  /** Takes a slot for one large body from `address`; call the function returned once, when done. */
  take(address: string | undefined): () => void {
    const key = address ?? "";
    const mine = this.byAddress.get(key) ?? 0;
    if (mine >= this.bounds.perAddress) {
      throw refusal(
        Code.ResourceExhausted,
        `too many large bodies at once from this address: at most ${this.bounds.perAddress} over 1 MiB`,
      );
    }
    if (this.taken >= this.bounds.total) {
      throw refusal(Code.Unavailable, "the server is reading as many large bodies as it can");
    }
    this.byAddress.set(key, mine + 1);
    this.taken++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.taken--;
      const left = (this.byAddress.get(key) ?? 1) - 1;
      if (left === 0) this.byAddress.delete(key);
      else this.byAddress.set(key, left);
    };
  }

  /**
   * The slot of one body from `address`, taken when the body is known to be large: at once when
   * `declaredLength` (Content-Length) says so, else when `admit` sees it grow past 1 MiB. Throws
   * the refusal when none is free; `release` when the request is over.
   */
  forBody(address: string | undefined, declaredLength: number | undefined): BodySlot {
    let release: (() => void) | undefined;
    const slot: BodySlot = {
      admit: (received) => {
        if (!release && Math.max(received, declaredLength ?? 0) > LARGE_BODY_BYTES) {
          release = this.take(address);
        }
      },
      release: () => release?.(),
    };
    slot.admit(0);
    return slot;
  }

  /** Slots taken now (for tests and metrics). */
  get inUse(): number {
    return this.taken;
  }
}

function refusal(code: Code, why: string): ConnectError {
  const error = fieldErrors(
    code,
    { request: `${why}; retry after 1 s` },
    { reason: "LARGE_BODIES_LIMITED", retryAfterSeconds: 1 },
  );
  error.metadata.set("retry-after", "1");
  return error;
}

export interface BodySlot {
  /** `received` bytes of the body are in: takes the slot once it is large, or throws. */
  admit(received: number): void;
  release(): void;
}
