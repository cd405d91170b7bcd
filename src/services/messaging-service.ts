import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  BatchInfoSchema,
  type BatchMessageError,
  BatchSchema,
  type MessagingService,
} from "../../gen/sms/v1/messaging_pb.ts";
import {
  type Message,
  MessageSchema,
  MessageStatus,
  NonDeliveryReason,
  NotificationState,
} from "../../gen/sms/v1/types_pb.ts";
import { deliveryClass } from "../domain/delivery-priority.ts";
import {
  BATCH_MAX_MESSAGES,
  isValidBatchName,
  TTL_DEFAULT_SECONDS,
  validateTtl,
} from "../domain/limits.ts";
import { batchCounters } from "../domain/message-status.ts";
import { MICROS } from "../store/accounts.ts";
import { discardBatch, storeBatch } from "../store/batch-commits.ts";
import { type ChargeConfirmations, chargeThenStore, type DebitResult } from "../store/charges.ts";
import type { Store } from "../store/database.ts";
import type {
  MessageDoc,
  NotificationDoc,
  PendingCharge,
  ReasonName,
  SegmentDoc,
  StatusName,
} from "../store/documents.ts";
import type { MessageWriter } from "../store/message-writer.ts";
import { acceptedMessage } from "../store/messages.ts";
import { type IdAllocator, reserveIds } from "../store/sequences.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateAccount } from "./authentication.ts";
import { checkCallbackUrl } from "./callback-urls.ts";
import { deadlineOf } from "./database-deadlines.ts";
import {
  cannotBeEmpty,
  type FieldMessages,
  insufficientCredit,
  invalidArgument,
  notFound,
  unavailable,
} from "./errors.ts";
import {
  type CheckedMessage,
  checkMessage,
  type IntakePolicy,
  resolveSender,
} from "./message-intake.ts";

export interface MessagingDeps {
  store: Store;
  directory: AccountDirectory;
  messageIds: IdAllocator;
  confirmations: ChargeConfirmations;
  /** Stores single sends with group commit. */
  writer: MessageWriter;
  policy: IntakePolicy & { pricePerPartMicros: number };
  /**
   * A call's deadline (services/database-deadlines.ts), and how long a batch may take to store
   * once charged; the settler's cutoff is at least twice the longer (docs/decisions.md).
   */
  timeouts?: { requestMs: number; batchStoreMs: number };
  /**
   * Called after messages are stored, before the answer: schedules their delivery (the account's
   * lanes, due at the earliest `deliveryAt`) and wakes the delivery worker.
   */
  onAccepted?: (accountId: string, deliveryAt: Date, acceptedAt: Date) => Promise<void> | void;
}

export function createMessagingService(deps: MessagingDeps): ServiceImpl<typeof MessagingService> {
  const { store, directory, policy } = deps;
  const timeouts = deps.timeouts ?? { requestMs: 5_000, batchStoreMs: 30_000 };

  /**
   * Confirms a charged write (a batch's; single sends are confirmed by the writer), or explains
   * why it was refused. Returns the credit left.
   */
  async function confirmCharge(
    apiKey: string,
    charge: Pick<PendingCharge, "amountMicros"> & Partial<PendingCharge>,
    result: DebitResult,
    deliveryAt: Date,
    acceptedAt: Date,
  ): Promise<number> {
    if (result === "busy") {
      throw unavailable(
        "too many requests of this account are still being stored; retry in a few seconds",
      );
    }
    if (result === "insufficient") {
      // Only on this failure path: one more read, so the caller learns how much is missing.
      const account = await store.accounts.findOne(
        { _id: apiKey },
        { projection: { creditMicros: 1 } },
      );
      const left = account ? `; the account has ${account.creditMicros / MICROS}` : "";
      throw insufficientCredit(
        `not enough credit: this request costs ${charge.amountMicros / MICROS}${left}`,
      );
    }
    if (charge.kind === "batch") deps.confirmations.add(apiKey, charge as PendingCharge);
    await deps.onAccepted?.(apiKey, deliveryAt, acceptedAt);
    return result.creditMicros / MICROS;
  }

  return {
    async sendMessage(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const errors: FieldMessages = {};
      const checked = checkMessage({ to: req.to, from: req.from, text: req.text }, account, policy);
      if ("errors" in checked) Object.assign(errors, checked.errors);
      const ttl = validateTtl(req.ttl);
      if (!ttl.ok) errors.ttl = ttl.error;
      const callbackError = req.statusCallback
        ? checkCallbackUrl("statusCallback", req.statusCallback)
        : undefined;
      if (callbackError) errors.statusCallback = callbackError;
      if (Object.keys(errors).length > 0 || !("message" in checked) || !ttl.ok) {
        throw invalidArgument(errors);
      }
      const message = checked.message;
      const id = await deps.messageIds.take(1 + (message.parts?.length ?? 0));
      const segments = segmentDocs(message.parts, id + 1);
      const now = store.clock.now();
      const doc = acceptedMessage(
        {
          id,
          accountId: account.apiKey,
          to: message.to,
          from: message.from,
          text: message.text,
          parts: message.partCount,
          ttl: ttl.ttl,
          deliveryClass: deliveryClass(message.from, account.otpSenders, false),
          ...(segments && { segments }),
          ...(req.statusCallback && { statusCallback: req.statusCallback }),
        },
        now,
      );
      // Charged and stamped when the writer issues its group (store/message-writer.ts).
      const amountMicros = message.partCount * policy.pricePerPartMicros;
      const creditRemaining = await confirmCharge(
        account.apiKey,
        { amountMicros },
        await deps.writer.write(
          account.apiKey,
          amountMicros,
          doc,
          deadlineOf(ctx, timeouts.requestMs),
        ),
        doc.deliveryAt ?? now,
        now,
      );
      return {
        message: create(MessageSchema, {
          id: BigInt(id),
          to: doc.to,
          from: doc.from,
          text: doc.text,
          status: MessageStatus.ACCEPTED,
          segments: segmentMessages(segments),
          creditRemaining,
        }),
      };
    },

    async sendBatch(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const requestErrors: FieldMessages = {};
      if (req.messages.length === 0) requestErrors.messages = cannotBeEmpty("messages");
      else if (req.messages.length > BATCH_MAX_MESSAGES) {
        requestErrors.messages = `messages holds ${req.messages.length} messages; at most ${BATCH_MAX_MESSAGES} are allowed`;
      }
      const name = req.name ?? "";
      if (!isValidBatchName(name)) requestErrors.name = "name must be at most 20 characters";
      if (req.from) {
        const parent = resolveSender(req.from, account, policy);
        if ("error" in parent) requestErrors.from = parent.error;
      }
      const callbackError = req.statusCallback
        ? checkCallbackUrl("statusCallback", req.statusCallback)
        : undefined;
      if (callbackError) requestErrors.statusCallback = callbackError;
      if (Object.keys(requestErrors).length > 0) throw invalidArgument(requestErrors);

      const accepted: CheckedMessage[] = [];
      const rejected: BatchMessageError[] = [];
      let idCount = 0;
      let partTotal = 0;
      req.messages.forEach((input, index) => {
        const checked = checkMessage(
          { to: input.to, from: input.from || req.from, text: input.text },
          account,
          policy,
        );
        if ("errors" in checked) {
          rejected.push({
            $typeName: "sms.v1.BatchMessageError",
            index,
            text: Object.values(checked.errors).join("; "),
          });
          return;
        }
        accepted.push(checked.message);
        idCount += 1 + (checked.message.parts?.length ?? 0);
        partTotal += checked.message.partCount;
      });

      const now = store.clock.now();
      const [batchId, firstId] = await Promise.all([
        reserveIds(store.counters, "batch", 1),
        idCount > 0 ? reserveIds(store.counters, "message", idCount) : Promise.resolve(0),
      ]);
      const batchDoc = {
        _id: batchId,
        accountId: account.apiKey,
        name,
        totalCount: req.messages.length,
        acceptedCount: accepted.length,
        rejectedCount: rejected.length,
        createdAt: now,
      };
      let creditRemaining: number | undefined;
      const deadline = deadlineOf(ctx, timeouts.requestMs);
      if (accepted.length === 0) {
        await store.batches.insertOne(batchDoc, deadline.options());
      } else {
        let nextId = firstId;
        const docs: MessageDoc[] = accepted.map((message) => {
          const id = nextId;
          const segments = segmentDocs(message.parts, id + 1);
          nextId += 1 + (message.parts?.length ?? 0);
          return acceptedMessage(
            {
              id,
              accountId: account.apiKey,
              batchId,
              to: message.to,
              from: message.from,
              text: message.text,
              parts: message.partCount,
              ttl: TTL_DEFAULT_SECONDS,
              deliveryClass: deliveryClass(message.from, account.otpSenders, true),
              ...(segments && { segments }),
              ...(req.statusCallback && { statusCallback: req.statusCallback }),
            },
            now,
          );
        });
        // Storing may take longer than a call's deadline; every write of it is issued under
        // this one, which starts when the charge is stamped, so the settler's rule holds.
        deadline.extendTo(Date.now() + timeouts.batchStoreMs);
        const charge: PendingCharge = {
          ref: batchId,
          kind: "batch",
          amountMicros: partTotal * policy.pricePerPartMicros,
          at: store.clock.now(),
        };
        // The messages first, then the batch document, which commits them (storeBatch); a crash
        // or an unknown outcome in between leaves a pending charge that the settler rolls back.
        const result = await chargeThenStore(
          store.accounts,
          account.apiKey,
          charge,
          () => storeBatch(store, docs, batchDoc, deadline),
          () => discardBatch(store, batchId),
          deadline,
        );
        let firstDue = now;
        for (const doc of docs)
          if (doc.deliveryAt && doc.deliveryAt < firstDue) firstDue = doc.deliveryAt;
        creditRemaining = await confirmCharge(account.apiKey, charge, result, firstDue, now);
      }
      return {
        batch: create(BatchSchema, {
          id: BigInt(batchId),
          name,
          totalCount: batchDoc.totalCount,
          acceptedCount: batchDoc.acceptedCount,
          rejectedCount: batchDoc.rejectedCount,
          errors: rejected,
          ...(creditRemaining !== undefined && { creditRemaining }),
        }),
      };
    },

    async getBatch(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const batch = await store.batches.findOne({ _id: Number(req.id), accountId: account.apiKey });
      if (!batch) throw notFound("id", `no batch with id ${req.id}`);
      const messages = await store.messages
        .find(
          { batchId: batch._id },
          { projection: { from: 1, to: 1, status: 1 }, sort: { _id: 1 } },
        )
        .toArray();
      const counters = batchCounters(messages.map((m) => m.status));
      return {
        batch: create(BatchInfoSchema, {
          id: BigInt(batch._id),
          name: batch.name,
          totalCount: batch.totalCount,
          acceptedCount: batch.acceptedCount,
          rejectedCount: batch.rejectedCount,
          sentCount: counters.sentCount,
          deliveredCount: counters.deliveredCount,
          undeliveredCount: counters.undeliveredCount,
          isActive: counters.isActive,
          messages: messages.map((m) => ({
            id: BigInt(m._id),
            from: m.from,
            to: m.to,
            status: STATUS_TO_PROTO[m.status],
          })),
        }),
      };
    },

    async getMessage(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const doc = await store.messages.findOne({ _id: Number(req.id), accountId: account.apiKey });
      if (!doc) throw notFound("id", `no message with id ${req.id}`);
      return { message: messageDetails(doc) };
    },
  };
}

function segmentMessages(segments: SegmentDoc[] | undefined) {
  return (segments ?? []).map((s) => ({ id: BigInt(s.id), text: s.text }));
}

function segmentDocs(parts: string[] | undefined, firstId: number): SegmentDoc[] | undefined {
  return parts?.map((text, i) => ({ id: firstId + i, text }));
}

export const STATUS_TO_PROTO: Record<StatusName, MessageStatus> = {
  ACCEPTED: MessageStatus.ACCEPTED,
  SENT: MessageStatus.SENT,
  DELIVERED: MessageStatus.DELIVERED,
  SEND_ERROR: MessageStatus.SEND_ERROR,
  DELIVERY_ERROR: MessageStatus.DELIVERY_ERROR,
};

const REASON_TO_PROTO: Record<ReasonName, NonDeliveryReason> = {
  Undelivered: NonDeliveryReason.UNDELIVERED,
  Unreachable: NonDeliveryReason.UNREACHABLE,
  Expired: NonDeliveryReason.EXPIRED,
  "SIM card full": NonDeliveryReason.SIM_CARD_FULL,
  Unroutable: NonDeliveryReason.UNROUTABLE,
};

const NOTIFICATION_STATE_TO_PROTO: Record<NotificationDoc["state"], NotificationState> = {
  pending: NotificationState.PENDING,
  delivered: NotificationState.DELIVERED,
  gave_up: NotificationState.GAVE_UP,
  skipped: NotificationState.SKIPPED,
};

/** The full view of a stored message: status, reason and every webhook attempt. */
function messageDetails(doc: MessageDoc): Message {
  return create(MessageSchema, {
    id: BigInt(doc._id),
    to: doc.to,
    from: doc.from,
    text: doc.text,
    status: STATUS_TO_PROTO[doc.status],
    segments: segmentMessages(doc.segments),
    ...(doc.batchId !== undefined && { batchId: BigInt(doc.batchId) }),
    nonDeliveryReason: doc.reason ? REASON_TO_PROTO[doc.reason] : NonDeliveryReason.UNSPECIFIED,
    ttlSeconds: doc.ttl,
    statusCallback: doc.statusCallback ?? "",
    createdAt: timestampFromDate(doc.createdAt),
    updatedAt: timestampFromDate(doc.updatedAt),
    notifications: doc.notifications.map((n) => ({
      status: STATUS_TO_PROTO[n.status],
      state: NOTIFICATION_STATE_TO_PROTO[n.state],
      url: n.url ?? "",
      ...(n.nextAttemptAt && { nextAttemptAt: timestampFromDate(n.nextAttemptAt) }),
      attempts: n.attempts.map((a) => ({
        at: timestampFromDate(a.at),
        httpStatus: a.httpStatus,
        error: a.error ?? "",
        durationMs: a.durationMs,
      })),
    })),
  });
}
