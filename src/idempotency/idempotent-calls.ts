import { createHash } from "node:crypto";
import { create, type DescMethod, fromBinary, type Message, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import { errorReasonOf, fieldErrors, fieldErrorsOf, type Reason } from "../errors/api-errors.ts";
import type { IdempotentCalls } from "../services/call-guards.ts";
import type { KeyStore, StoredAnswer } from "./key-store.ts";

// The rule of the design, once for both doors: a call that creates something (SendMessage,
// SendBatch, CreateSenderName) may carry `idempotency-key` (REST: the Idempotency-Key header).
// Same account and key within 24 h: the first answer again, marked `idempotent-replayed: true`,
// nothing stored or charged again; while the first still runs: ABORTED (409); with another
// request: ALREADY_EXISTS (422).

/** 1 to 255 visible ASCII characters. */
const VALID_KEY = /^[\x21-\x7e]{1,255}$/;

export const REPLAYED_HEADER = "idempotent-replayed";

/** The calls that create something, and so take a key. */
export const KEYED_METHODS: ReadonlySet<DescMethod> = new Set<DescMethod>([
  MessagingService.method.sendMessage,
  MessagingService.method.sendBatch,
  SenderNameService.method.createSenderName,
]);

/**
 * Refusals that stored and charged nothing and would be the same again: kept and replayed like a
 * success. Any other error (internal, unavailable, deadline) may hide an outcome we cannot know:
 * the key is released, and a retry runs again.
 */
const DEFINITE_REFUSALS = new Set([
  Code.InvalidArgument,
  Code.FailedPrecondition,
  Code.NotFound,
  Code.OutOfRange,
  Code.PermissionDenied,
  Code.AlreadyExists,
]);

export class IdempotencyKeys implements IdempotentCalls {
  constructor(
    private readonly store: KeyStore,
    /** An outcome that could not be recorded: the key stays running until it is stale. */
    private readonly onError: (error: unknown) => void,
    private readonly methods: ReadonlySet<DescMethod> = KEYED_METHODS,
  ) {}

  handles(method: DescMethod): boolean {
    return this.methods.has(method);
  }

  async run(
    accountId: string,
    method: DescMethod,
    request: unknown,
    context: HandlerContext,
    next: () => Promise<unknown>,
  ): Promise<unknown> {
    const key = context.requestHeader.get("idempotency-key");
    if (key === null) return next();
    if (!VALID_KEY.test(key)) {
      throw fieldErrors(
        Code.InvalidArgument,
        { request: "Idempotency-Key must be 1 to 255 visible ASCII characters" },
        { reason: "IDEMPOTENCY_KEY_INVALID" },
      );
    }
    const claim = await this.store.claim(accountId, key, fingerprint(method, request));
    switch (claim.kind) {
      case "mismatch":
        throw fieldErrors(Code.AlreadyExists, {
          request: `Idempotency-Key ${key} was used with a different request; use a new key for a new request`,
        });
      case "running":
        throw fieldErrors(Code.Aborted, {
          request: `a request with Idempotency-Key ${key} is still being processed; retry later`,
        });
      case "done":
        return replay(method, claim.answer, context);
    }

    let outcome:
      | { answer: StoredAnswer; result: Message }
      | { answer?: StoredAnswer; error: unknown };
    try {
      const result = create(method.output, (await next()) as never);
      outcome = { answer: { kind: "message", bytes: toBinary(method.output, result) }, result };
    } catch (error) {
      outcome = { error, ...(definite(error) && { answer: errorAnswer(error as ConnectError) }) };
    }
    const recorded = outcome.answer
      ? this.store.finish(accountId, key, claim.attempt, outcome.answer)
      : this.store.release(accountId, key, claim.attempt);
    await recorded.catch(this.onError);
    if ("error" in outcome) throw outcome.error;
    return outcome.result;
  }
}

function fingerprint(method: DescMethod, request: unknown): string {
  return createHash("sha256")
    .update(`${method.parent.typeName}/${method.name}\n`)
    .update(toBinary(method.input, request as never))
    .digest("base64");
}

function definite(error: unknown): boolean {
  return error instanceof ConnectError && DEFINITE_REFUSALS.has(error.code);
}

function errorAnswer(error: ConnectError): StoredAnswer {
  return {
    kind: "error",
    code: error.code,
    message: error.rawMessage,
    fields: fieldErrorsOf(error).map(({ field, message }) => ({ field, message })),
    ...(errorReasonOf(error) && { reason: errorReasonOf(error) }),
  };
}

function replay(method: DescMethod, answer: StoredAnswer, context: HandlerContext): Message {
  if (answer.kind === "error") {
    const fields =
      answer.fields.length > 0
        ? Object.fromEntries(answer.fields.map((f) => [f.field, f.message]))
        : { request: answer.message };
    const error = fieldErrors(
      answer.code,
      fields,
      answer.reason ? { reason: answer.reason as Reason } : {},
    );
    error.metadata.set(REPLAYED_HEADER, "true");
    throw error;
  }
  context.responseHeader.set(REPLAYED_HEADER, "true");
  const bytes = answer.bytes instanceof Uint8Array ? answer.bytes : answer.bytes.value();
  return fromBinary(method.output, bytes);
}
