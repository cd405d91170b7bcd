import type { ServiceImpl } from "@connectrpc/connect";
import type { BatchMessageError, MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import {
  BATCH_MAX_MESSAGES,
  isValidBatchName,
  TTL_DEFAULT_SECONDS,
  validateTtl,
} from "../domain/limits.ts";
import { batchCounters } from "../domain/message-status.ts";
import {
  cannotBeEmpty,
  type FieldMessages,
  insufficientCredit,
  invalidArgument,
  notFound,
  unavailable,
} from "../errors/api-errors.ts";
import type { IntakeMetrics } from "../metrics/intake.ts";
import type { OptOutReads } from "../opt-outs/list-reads.ts";
import { recipientOptedOut } from "../opt-outs/resources.ts";
import { MICROS } from "../store/accounts.ts";
import { discardBatch, storeBatch } from "../store/batch-commits.ts";
import { type ChargeConfirmations, chargeThenStore, type DebitResult } from "../store/charges.ts";
import type { Store } from "../store/database.ts";
import type { MessageDoc, PendingCharge } from "../store/documents.ts";
import type { MessageWriter } from "../store/message-writer.ts";
import { type IdAllocator, reserveIds } from "../store/sequences.ts";
import { currentTraceCarrier } from "../tracing/tracing.ts";
import type { AccountDirectory } from "./account-directory.ts";
import { authenticateAccount } from "./authentication.ts";
import { mergeByIndex, rejection, withoutOptedOut } from "./batch-rejections.ts";
import { checkCallbackUrl } from "./callback-urls.ts";
import { deadlineOf } from "./database-deadlines.ts";
import { LoopSlices, mapInSlices } from "./loop-slices.ts";
import { acceptedDocument, idsTaken } from "./message-documents.ts";
import {
  type CheckedMessage,
  checkMessage,
  type IntakePolicy,
  resolveSender,
} from "./message-intake.ts";
import { BATCH_SUMMARY, batchNotFound, messageLists } from "./message-lists.ts";
import { quoteMessage } from "./message-quotes.ts";
import { batchResource, messageResource } from "./message-resources.ts";

export type OptedOutCheck = (
  accountId: string,
  numbers: string[],
  options: { maxTimeMS: number; signal: AbortSignal },
) => Promise<ReadonlySet<string>>;

export interface MessagingDeps {
  store: Store;
  directory: AccountDirectory;
  messageIds: IdAllocator;
  confirmations: ChargeConfirmations;
  /** Stores single sends with group commit. */
  writer: MessageWriter;
  /** Senders, text length, and (policy.routing) number validation, prices per part and routes. */
  policy: IntakePolicy;
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
  /** Counts what is accepted, refused and charged (metrics/intake.ts); none when absent. */
  intake?: IntakeMetrics;
  /**
   * The canonical (`+`) numbers among `numbers` on the account's opt-out list, which are refused
   * before anything is stored or charged (services/opt-out-rules.ts); none refused when absent.
   */
  optedOut?: OptedOutCheck;
  /** A single send's check of the list, which reads nothing while it is empty. */
  sendChecks?: Pick<OptOutReads, "checkSend" | "forget">;
}

export function createMessagingService(deps: MessagingDeps): ServiceImpl<typeof MessagingService> {
  const { store, directory, policy } = deps;
  const timeouts = deps.timeouts ?? { requestMs: 5_000, batchStoreMs: 30_000 };

  /**
   * Confirms a charged write (a batch's; single sends are confirmed by the writer), or explains
   * why it was refused. Returns the credit left, in micro-units.
   */
  async function confirmCharge(
    apiKey: string,
    charge: Pick<PendingCharge, "amountMicros"> & Partial<PendingCharge>,
    result: DebitResult,
    deliveryAt: Date,
    acceptedAt: Date,
    counts: { messages: number; parts: number },
  ): Promise<bigint> {
    if (result !== "busy" && result !== "insufficient") {
      deps.intake?.accepted(counts.messages, counts.parts, charge.amountMicros);
    } else
      deps.intake?.rejected(result === "busy" ? "busy" : "credit", counts.messages, counts.parts);
    if (result === "busy") {
      throw unavailable(
        "too many requests of this account are still being stored; retry in a few seconds",
        "ACCOUNT_BUSY",
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
    return BigInt(result.creditMicros);
  }

  return {
    ...messageLists({ store, directory, requestMs: timeouts.requestMs }),

    async sendMessage(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const errors: FieldMessages = {};
      // Keys are proto field paths; the messages name the REST parameters (SendMessageRequest's
      // JSON names), which the REST façade shows.
      const checked = checkMessage(
        { to: req.to, from: req.sender, text: req.text },
        account,
        policy,
      );
      if ("errors" in checked) Object.assign(errors, checked.errors);
      const ttl = validateTtl(req.ttlSeconds);
      if (!ttl.ok) errors.ttl_seconds = ttl.error;
      const callbackError = req.statusCallback
        ? checkCallbackUrl("statusCallback", req.statusCallback)
        : undefined;
      if (callbackError) errors.status_callback = callbackError;
      if (Object.keys(errors).length > 0 || !("message" in checked) || !ttl.ok) {
        deps.intake?.rejected("invalid", 1, "message" in checked ? checked.message.partCount : 0);
        throw invalidArgument(errors);
      }
      const message = checked.message;
      const deadline = deadlineOf(ctx, timeouts.requestMs);
      // The list is checked while the id is taken: one round trip at most, not two.
      const [check, id] = await Promise.all([
        deps.sendChecks?.checkSend(account.apiKey, message.to, deadline.options()),
        deps.messageIds.take(idsTaken(message)),
      ]);
      const refuse = () => {
        deps.intake?.rejected("opted_out", 1, message.partCount);
        return recipientOptedOut();
      };
      if (check?.optedOut) throw refuse();
      const now = store.clock.now();
      const doc = acceptedDocument(
        message,
        account,
        policy,
        // The request's trace, which the message's delivery and webhooks join (tracing on only).
        {
          id,
          ttl: ttl.ttl,
          statusCallback: req.statusCallback,
          traceContext: currentTraceCarrier(),
        },
        now,
      );
      // Charged and stamped when the writer issues its group (store/message-writer.ts).
      const amountMicros = message.partCount * message.destination.pricePerPartMicros;
      let written = await deps.writer.write(
        account.apiKey,
        amountMicros,
        doc,
        deadline,
        check?.listVersion,
      );
      if (written === "stale") {
        // The list changed since it was found empty: read, and write without the condition.
        deps.sendChecks?.forget(account.apiKey);
        const listed = await deps.optedOut?.(account.apiKey, [message.to], deadline.options());
        if (listed && listed.size > 0) throw refuse();
        written = await deps.writer.write(account.apiKey, amountMicros, doc, deadline);
      }
      const creditRemaining = await confirmCharge(
        account.apiKey,
        { amountMicros },
        written === "stale" ? "busy" : written,
        doc.deliveryAt ?? now,
        now,
        { messages: 1, parts: message.partCount },
      );
      // The whole resource as stored, and the balance this charge left.
      const resource = messageResource(doc);
      resource.creditRemainingMicros = creditRemaining;
      return { message: resource };
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
      if (req.sender) {
        const parent = resolveSender(req.sender, account, policy);
        if ("error" in parent) requestErrors.sender = parent.error;
      }
      const callbackError = req.statusCallback
        ? checkCallbackUrl("statusCallback", req.statusCallback)
        : undefined;
      if (callbackError) requestErrors.status_callback = callbackError;
      if (Object.keys(requestErrors).length > 0) {
        deps.intake?.rejected("invalid", req.messages.length, 0);
        throw invalidArgument(requestErrors);
      }

      // The opt-out list is read (one $in for the whole batch) while the messages are checked.
      const listed = deps.optedOut?.(
        account.apiKey,
        req.messages.map((m) => m.to),
        deadlineOf(ctx, timeouts.requestMs).options(),
      );
      // Awaited below; a failure meanwhile must not go unhandled.
      listed?.catch(() => undefined);
      let accepted: CheckedMessage[] = [];
      let rejected: BatchMessageError[] = [];
      const acceptedAt: number[] = [];
      let idCount = 0;
      // Up to 10000 messages of long texts take seconds: in slices, other calls are answered.
      // The first slice starts after a turn: this one already parsed and validated the request.
      const slices = new LoopSlices();
      await slices.next();
      for (const [index, input] of req.messages.entries()) {
        if (slices.due()) await slices.next();
        const checked = checkMessage(
          { to: input.to, from: input.sender || req.sender, text: input.text },
          account,
          policy,
        );
        if ("errors" in checked) {
          rejected.push(rejection(index, checked.errors));
          continue;
        }
        accepted.push(checked.message);
        acceptedAt.push(index);
        idCount += idsTaken(checked.message);
      }

      if (rejected.length > 0) deps.intake?.rejected("invalid", rejected.length, 0);
      const now = store.clock.now();
      // Ids are reserved for every valid message; those of opted-out messages stay unused.
      const [batchId, firstId, refused] = await Promise.all([
        reserveIds(store.counters, "batch", 1),
        idCount > 0 ? reserveIds(store.counters, "message", idCount) : Promise.resolve(0),
        listed,
      ]);
      if (refused && refused.size > 0) {
        const split = withoutOptedOut(accepted, acceptedAt, refused);
        accepted = split.accepted;
        rejected = mergeByIndex(rejected, split.rejected);
        deps.intake?.rejected("opted_out", split.rejected.length, split.parts);
      }
      let partTotal = 0;
      let amountTotal = 0;
      for (const m of accepted) {
        partTotal += m.partCount;
        amountTotal += m.partCount * m.destination.pricePerPartMicros;
      }
      const batchDoc = {
        _id: batchId,
        accountId: account.apiKey,
        name,
        totalCount: req.messages.length,
        acceptedCount: accepted.length,
        rejectedCount: rejected.length,
        createdAt: now,
      };
      let creditRemaining: bigint | undefined;
      const deadline = deadlineOf(ctx, timeouts.requestMs);
      if (accepted.length === 0) {
        await store.batches.insertOne(batchDoc, deadline.options());
      } else {
        let nextId = firstId;
        const traceContext = currentTraceCarrier();
        const docs: MessageDoc[] = await mapInSlices(
          accepted,
          (message) => {
            const id = nextId;
            nextId += idsTaken(message);
            const { statusCallback } = req;
            const fields = { id, batchId, ttl: TTL_DEFAULT_SECONDS, statusCallback, traceContext };
            return acceptedDocument(message, account, policy, fields, now);
          },
          slices,
        );
        // Storing may take longer than a call's deadline; every write of it is issued under
        // this one, which starts when the charge is stamped, so the settler's rule holds.
        deadline.extendTo(Date.now() + timeouts.batchStoreMs);
        const charge: PendingCharge = {
          ref: batchId,
          kind: "batch",
          amountMicros: amountTotal,
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
        creditRemaining = await confirmCharge(account.apiKey, charge, result, firstDue, now, {
          messages: accepted.length,
          parts: partTotal,
        });
      }
      return {
        batch: batchResource(batchDoc),
        errors: rejected,
        ...(creditRemaining !== undefined && { creditRemainingMicros: creditRemaining }),
      };
    },

    async getBatch(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const options = deadlineOf(ctx, timeouts.requestMs).options();
      const batch = await store.batches.findOne(
        { _id: Number(req.id), accountId: account.apiKey },
        options,
      );
      if (!batch) throw batchNotFound("id", req.id);
      if (ctx.values.get(BATCH_SUMMARY)) return { batch: batchResource(batch) };
      // At most 10000 statuses, read through the batch's index.
      const statuses = await store.messages
        .find({ batchId: batch._id }, { ...options, projection: { _id: 0, status: 1 } })
        .toArray();
      return { batch: batchResource(batch, batchCounters(statuses.map((m) => m.status))) };
    },

    async quoteMessage(req, ctx) {
      await authenticateAccount(ctx, directory);
      return quoteMessage(req, policy);
    },

    async getMessage(req, ctx) {
      const account = await authenticateAccount(ctx, directory);
      const doc = await store.messages.findOne(
        { _id: Number(req.id), accountId: account.apiKey },
        deadlineOf(ctx, timeouts.requestMs).options(),
      );
      if (!doc) {
        throw notFound("id", `no message with id ${req.id}`, "MESSAGE_NOT_FOUND", {
          type: "sms.v1.Message",
          name: `${req.id}`,
        });
      }
      return { message: messageResource(doc) };
    },
  };
}
