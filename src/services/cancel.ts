/**
 * CancelMessage and CancelBatch (docs/design.md "Message reads, client references, scheduled
 * sends and cancel"): a message no carrier took and no worker holds becomes CANCELED, with its
 * webhook, and is refunded exactly once through the refund of messages that never left
 * (opt-outs/withdrawals.ts refundUnsent).
 *
 * The race with the delivery worker is settled in the database, message by message: the cancel's
 * update takes a message only while it is ACCEPTED, untouched by any carrier (no carrier ids, no
 * carrier pinned, no submission attempt left standing) and with no live claim (no lease, or one
 * that ended by the server clock). A worker writes a part only while it knows its claim's lease
 * to run at least a third of a lease longer (delivery/worker.ts, scheduling/lease-keeper.ts), and
 * a renewal that finds a message gone keeps it off the wire: so once the cancel answers 200, no
 * instance hands the message to a carrier.
 */
import { Code, type HandlerContext } from "@connectrpc/connect";
import type { Filter } from "mongodb";
import type {
  CancelBatchRequest,
  CancelBatchResponse,
  CancelMessageRequest,
  CancelMessageResponse,
} from "../../gen/sms/v1/messaging_pb.ts";
import { fieldErrors, notFound } from "../errors/api-errors.ts";
import { refundUnsent } from "../opt-outs/withdrawals.ts";
import { MICROS } from "../store/accounts.ts";
import type { MessageDoc } from "../store/documents.ts";
import { authenticateAccount } from "./authentication.ts";
import { deadlineOf } from "./database-deadlines.ts";
import { batchNotFound } from "./message-lists.ts";
import { messageResource } from "./message-resources.ts";
import { type MessagingDeps, timeoutsOf } from "./messaging-deps.ts";

/** The conditions under which a message may still be canceled, at `now` (server clock). */
export function cancelable(now: Date): Filter<MessageDoc> {
  return {
    status: "ACCEPTED",
    carrierIds: { $exists: false },
    carrier: { $exists: false },
    $and: [
      { $or: [{ deliveryLease: { $exists: false } }, { "deliveryLease.until": { $lte: now } }] },
      // A submission begun and never taken back may have reached the carrier (a crash).
      { $or: [{ submitAttempts: { $exists: false } }, { submitAttempts: { $lte: 0 } }] },
    ],
  };
}

const CANDIDATE_FIELDS = { _id: 1, parts: 1, pricePerPartMicros: 1, status: 1 } as const;

const alreadySubmitted = (id: bigint) =>
  fieldErrors(
    Code.FailedPrecondition,
    { id: `message ${id} was already handed to a carrier or claimed by a delivery worker` },
    { reason: "MESSAGE_ALREADY_SUBMITTED" },
  );

const messageNotFound = (id: bigint) =>
  notFound("id", `no message with id ${id}`, "MESSAGE_NOT_FOUND", {
    type: "sms.v1.Message",
    name: `${id}`,
  });

export function cancels(deps: MessagingDeps) {
  const { store, directory } = deps;
  const timeouts = timeoutsOf(deps);
  const options = (ctx: HandlerContext) => deadlineOf(ctx, timeouts.requestMs).options();

  /** Cancels those of `candidates` that still may be; their webhooks are due at once. */
  async function cancelSome(
    accountId: string,
    candidates: Pick<MessageDoc, "_id" | "parts" | "pricePerPartMicros">[],
  ): Promise<number[]> {
    const now = store.clock.now();
    const ids = await refundUnsent(store, accountId, candidates, MICROS, now, {
      status: "CANCELED",
      filter: cancelable(now),
    });
    // The CANCELED webhooks are due; the delivery lane settles on its own.
    if (ids.length > 0) await deps.onAccepted?.(accountId, now, now);
    return ids;
  }

  return {
    async cancelMessage(
      req: CancelMessageRequest,
      ctx: HandlerContext,
    ): Promise<Omit<CancelMessageResponse, "$typeName">> {
      const account = await authenticateAccount(ctx, directory);
      const filter = { _id: Number(req.id), accountId: account.apiKey };
      const found = await store.messages.findOne(filter, {
        ...options(ctx),
        projection: CANDIDATE_FIELDS,
      });
      if (!found) throw messageNotFound(req.id);
      if (found.status === "ACCEPTED") await cancelSome(account.apiKey, [found]);
      const doc = await store.messages.findOne(filter, {
        ...options(ctx),
        projection: { notifications: 0 },
      });
      if (!doc) throw messageNotFound(req.id);
      // Canceled now, or earlier (a repeated cancel answers the same).
      if (doc.status !== "CANCELED") throw alreadySubmitted(req.id);
      return { message: messageResource(doc) };
    },

    async cancelBatch(
      req: CancelBatchRequest,
      ctx: HandlerContext,
    ): Promise<Omit<CancelBatchResponse, "$typeName">> {
      const account = await authenticateAccount(ctx, directory);
      const batch = await store.batches.findOne(
        { _id: Number(req.id), accountId: account.apiKey },
        { ...options(ctx), projection: { _id: 1 } },
      );
      if (!batch) throw batchNotFound("id", req.id);
      const candidates = await store.messages
        .find(
          { batchId: batch._id, status: "ACCEPTED" },
          { ...options(ctx), projection: CANDIDATE_FIELDS },
        )
        .toArray();
      // One refund, one pending record, for the whole batch.
      await cancelSome(account.apiKey, candidates);
      const statuses = await store.messages
        .find({ batchId: batch._id }, { ...options(ctx), projection: { _id: 0, status: 1 } })
        .toArray();
      const canceled = statuses.filter((m) => m.status === "CANCELED").length;
      return {
        id: req.id,
        canceledCount: canceled,
        notCanceledCount: statuses.length - canceled,
      };
    },
  };
}
