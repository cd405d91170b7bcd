import type { DescService } from "@bufbuild/protobuf";
import {
  ConnectError,
  createContextKey,
  type HandlerContext,
  type ServiceImpl,
} from "@connectrpc/connect";
import { unavailable } from "../errors/api-errors.ts";
import { Deadline, DeadlineExceeded } from "../store/deadline.ts";
import { isUnavailable, OutcomeUnknown } from "../store/write-outcomes.ts";
import { guarded } from "./guarded.ts";

// Every call has a deadline (SMS_REQUEST_TIMEOUT_MS): it is answered UNAVAILABLE (REST 503 with
// Retry-After) when the deadline passes or the database cannot be reached, instead of waiting on
// a database that does not answer. The handler's own database calls carry the same deadline
// (store/deadline.ts), which a batch extends once it starts storing (SMS_BATCH_STORE_TIMEOUT_MS).

/** The deadline of the call being handled. */
export const REQUEST_DEADLINE = createContextKey<Deadline | undefined>(undefined, {
  description: "the deadline of the call",
});

/** The deadline of `context`'s call, or a new one of `fallbackMs` outside `withDeadlines`. */
export function deadlineOf(context: HandlerContext, fallbackMs: number): Deadline {
  let deadline = context.values.get(REQUEST_DEADLINE);
  if (!deadline) {
    deadline = Deadline.in(fallbackMs);
    context.values.set(REQUEST_DEADLINE, deadline);
  }
  return deadline;
}

export const DATABASE_UNAVAILABLE =
  "the database is unavailable or too slow to answer now; retry in a few seconds";
export const OUTCOME_UNKNOWN =
  "the database did not confirm storing this request: what was stored is sent and charged, what was not is refunded; look for it (ListMessages) before sending it again, as a retry, even with the same Idempotency-Key, may send it twice";

/** Where a call answered UNAVAILABLE for a database failure says what failed. */
export interface DeadlineLog {
  warn(details: object, message: string): void;
}

/**
 * `impl` with each unary call held to a deadline of `timeoutMs`, database failures as UNAVAILABLE.
 * The caller is told only that the database failed; `log` gets the failure itself, which the
 * operator needs (a 503 would otherwise leave no trace of its cause).
 */
export function withDeadlines<S extends DescService>(
  service: S,
  impl: ServiceImpl<S>,
  timeoutMs: number,
  log?: DeadlineLog,
): ServiceImpl<S> {
  return guarded(service, impl, async (method, _request, context, next) => {
    const deadline = Deadline.in(timeoutMs);
    context.values.set(REQUEST_DEADLINE, deadline);
    // Past the deadline the caller is answered; the handler's own calls stop at the same time.
    // One promise per call: the handler's outcome or the deadline's, whichever comes first (no
    // listener on an abort signal, no race of two promises).
    const answered = new Promise<unknown>((resolve, reject) => {
      deadline.onExpiry(() => reject(new DeadlineExceeded()));
      Promise.resolve()
        .then(next)
        .then(resolve, reject)
        .finally(() => deadline.dispose());
    });
    try {
      return await answered;
    } catch (error) {
      const answer = asUnavailable(error);
      if (answer !== error) {
        log?.warn(
          { err: error, rpc: `${service.typeName}/${method.name}` },
          "answered UNAVAILABLE: the database failed or did not answer in time",
        );
      }
      throw answer;
    }
  });
}

/** Database failures as UNAVAILABLE; every other error as it is. */
export function asUnavailable(error: unknown): unknown {
  if (error instanceof ConnectError) return error;
  if (error instanceof OutcomeUnknown) return unavailable(OUTCOME_UNKNOWN, "OUTCOME_UNKNOWN");
  if (error instanceof DeadlineExceeded || isUnavailable(error))
    return unavailable(DATABASE_UNAVAILABLE);
  return error;
}
