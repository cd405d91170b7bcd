import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { BatchMessageError } from "../../gen/sms/v1/messaging_pb.ts";
import { BATCH_MAX_MESSAGES, isValidBatchName, TTL_DEFAULT_SECONDS } from "../domain/limits.ts";
import { checkSendAt, clientRefError } from "../domain/scheduled-sends.ts";
import { cannotBeEmpty, type FieldMessages, invalidArgument } from "../errors/api-errors.ts";
import { spendCheck } from "../money/spend-controls.ts";
import { riskEvent, TOLL_FRAUD_MESSAGE } from "../money/toll-fraud-guard.ts";
import { discardBatch, storeBatch } from "../store/batch-commits.ts";
import { chargeThenStore } from "../store/charges.ts";
import type { MessageDoc, PendingCharge } from "../store/documents.ts";
import { batchUsage } from "../store/ledger.ts";
import { SharedValues } from "../store/messages.ts";
import { reserveIds } from "../store/sequences.ts";
import { currentTraceCarrier } from "../tracing/tracing.ts";
import { authenticateAccount } from "./authentication.ts";
import { mergeByIndex, rejection, withoutOptedOut } from "./batch-rejections.ts";
import { checkCallbackUrl } from "./callback-urls.ts";
import { confirmCharge } from "./charge-confirmation.ts";
import { deadlineOf } from "./database-deadlines.ts";
import { LoopSlices, mapInSlices } from "./loop-slices.ts";
import { acceptedDocument, idsTaken } from "./message-documents.ts";
import { type CheckedMessage, checkMessage, resolveSender } from "./message-intake.ts";
import { batchResource } from "./message-resources.ts";
import { type MessagingDeps, type MessagingImpl, timeoutsOf } from "./messaging-deps.ts";
import { quietHoursHold } from "./quiet-hours.ts";

/**
 * A batch keeps at most this many of its flagged (or refused) messages for the console: enough to
 * show the ranges; the metric counts them all, and flagged messages carry their mark.
 */
const MAX_RISK_EVENTS = 100;

/**
 * SendBatch: up to 10000 messages checked in slices, the valid ones charged at once and stored,
 * the batch document last (it commits them); the invalid and opted-out ones answered by index.
 */
export function sendBatch(deps: MessagingDeps): MessagingImpl["sendBatch"] {
  const { store, directory, policy } = deps;
  const timeouts = timeoutsOf(deps);
  return async (req, ctx) => {
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
    const refError = req.clientRef !== undefined ? clientRefError(req.clientRef) : undefined;
    if (refError) requestErrors.client_ref = refError;
    const when = req.sendTime
      ? checkSendAt(timestampDate(req.sendTime), store.clock.now())
      : ({ ok: true, sendAt: undefined } as const);
    if (!when.ok) requestErrors.send_time = when.error;
    if (Object.keys(requestErrors).length > 0 || !when.ok) {
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
    let refusedByControls = 0;
    // The account's controls and the guard, each set up once for the batch.
    const refusalOf = spendCheck(account.spendControls);
    const risk = deps.risk;
    const guard = risk?.guard.checker(account.apiKey, account.riskOverrides);
    // The toll-fraud guard's verdicts: refused by number, flagged by message.
    const refusedByGuard: string[] = [];
    const flagged = new Set<CheckedMessage>();
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
      const ownRefError =
        input.clientRef !== undefined ? clientRefError(input.clientRef) : undefined;
      if ("errors" in checked || ownRefError) {
        const errors = "errors" in checked ? checked.errors : {};
        if (ownRefError) errors.client_ref = ownRefError;
        rejected.push(rejection(index, errors));
        continue;
      }
      const { destination } = checked.message;
      const refusal = refusalOf?.(
        destination.country,
        checked.message.partCount * destination.pricePerPartMicros,
      );
      if (refusal) {
        refusedByControls++;
        rejected.push(rejection(index, { to: refusal.message }, refusal.reason));
        continue;
      }
      // The number as checked (E.164), as a single send counts it.
      const verdict = guard?.(checked.message.to) ?? "ok";
      if (verdict === "refused") {
        refusedByGuard.push(checked.message.to);
        rejected.push(rejection(index, { to: TOLL_FRAUD_MESSAGE }, "SUSPECTED_TOLL_FRAUD"));
        continue;
      }
      const clientRef = input.clientRef ?? req.clientRef;
      const message = clientRef === undefined ? checked.message : { ...checked.message, clientRef };
      if (verdict === "flagged") flagged.add(message);
      accepted.push(message);
      acceptedAt.push(index);
      idCount += idsTaken(checked.message);
    }

    const invalid = rejected.length - refusedByControls - refusedByGuard.length;
    if (invalid > 0) deps.intake?.rejected("invalid", invalid, 0);
    if (refusedByControls > 0) deps.intake?.rejected("spend_controls", refusedByControls, 0);
    if (refusedByGuard.length > 0 && risk) {
      deps.intake?.rejected("toll_fraud", refusedByGuard.length, 0);
      deps.intake?.riskFlagged?.("refused", refusedByGuard.length);
      risk.events.keep(
        refusedByGuard
          .slice(0, MAX_RISK_EVENTS)
          .map((to) => riskEvent(risk.guard, account.apiKey, to, "refused")),
      );
    }
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
    const flaggedDocs: MessageDoc[] = [];
    const deadline = deadlineOf(ctx, timeouts.requestMs);
    if (accepted.length === 0) {
      await store.batches.insertOne(batchDoc, deadline.options());
    } else {
      let nextId = firstId;
      const traceContext = currentTraceCarrier();
      // Quiet hours: each message's hold, by its recipient's zones (none without quiet hours).
      const holds = account.quietHours
        ? await Promise.all(
            accepted.map((m) =>
              quietHoursHold(account, m, when.sendAt ?? now, req.ignoreQuietHours),
            ),
          )
        : undefined;
      // The batch's dates and notification group, made once for all its documents.
      const shared = new SharedValues();
      const docs: MessageDoc[] = await mapInSlices(
        accepted,
        (message, index) => {
          const id = nextId;
          nextId += idsTaken(message);
          const { statusCallback } = req;
          const fields = {
            id,
            batchId,
            ttl: TTL_DEFAULT_SECONDS,
            statusCallback,
            traceContext,
            clientRef: message.clientRef,
            sendAt: when.sendAt,
            holdUntil: holds?.[index],
          };
          const doc = acceptedDocument(message, account, policy, fields, now, shared);
          if (flagged.has(message)) {
            doc.risk = "prefix_burst";
            flaggedDocs.push(doc);
          }
          return doc;
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
        store,
        account.apiKey,
        charge,
        () => storeBatch(store, docs, batchDoc, deadline),
        () => discardBatch(store, batchId),
        deadline,
        account.spendControls?.dailySpendLimitMicros,
      );
      let firstDue = now;
      for (const doc of docs)
        if (doc.deliveryAt && doc.deliveryAt < firstDue) firstDue = doc.deliveryAt;
      creditRemaining = await confirmCharge(
        deps,
        account.apiKey,
        charge,
        result,
        firstDue,
        now,
        { messages: accepted.length, parts: partTotal },
        batchUsage(docs),
      );
    }
    if (flaggedDocs.length > 0 && risk && creditRemaining !== undefined) {
      const kept = flaggedDocs;
      deps.intake?.riskFlagged?.("flagged", kept.length);
      risk.events.keep(
        kept
          .slice(0, MAX_RISK_EVENTS)
          .map((d) => riskEvent(risk.guard, account.apiKey, d.to, "flagged", d._id)),
      );
    }
    return {
      batch: batchResource(batchDoc),
      errors: rejected,
      ...(creditRemaining !== undefined && { creditRemainingMicros: creditRemaining }),
    };
  };
}
