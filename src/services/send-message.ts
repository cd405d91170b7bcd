import { timestampDate } from "@bufbuild/protobuf/wkt";
import { validateTtl } from "../domain/limits.ts";
import { checkSendAt, clientRefError } from "../domain/scheduled-sends.ts";
import { type FieldMessages, invalidArgument } from "../errors/api-errors.ts";
import { spendRefusal, spendRefused } from "../money/spend-controls.ts";
import { riskEvent, tollFraudRefused } from "../money/toll-fraud-guard.ts";
import { recipientOptedOut } from "../opt-outs/resources.ts";
import { currentTraceCarrier } from "../tracing/tracing.ts";
import { authenticateAccount } from "./authentication.ts";
import { checkCallbackUrl } from "./callback-urls.ts";
import { confirmCharge } from "./charge-confirmation.ts";
import { deadlineOf } from "./database-deadlines.ts";
import { acceptedDocument, idsTaken } from "./message-documents.ts";
import { checkMessage } from "./message-intake.ts";
import { messageResource } from "./message-resources.ts";
import { type MessagingDeps, type MessagingImpl, timeoutsOf } from "./messaging-deps.ts";
import { quietHoursHold } from "./quiet-hours.ts";

/** SendMessage: one message checked, charged and stored by group commit (store/message-writer.ts). */
export function sendMessage(deps: MessagingDeps): MessagingImpl["sendMessage"] {
  const { store, directory, policy } = deps;
  const timeouts = timeoutsOf(deps);
  return async (req, ctx) => {
    const account = await authenticateAccount(ctx, directory);
    const errors: FieldMessages = {};
    // Keys are proto field paths; the messages name the REST parameters (SendMessageRequest's
    // JSON names), which the REST façade shows.
    const checked = checkMessage({ to: req.to, from: req.sender, text: req.text }, account, policy);
    if ("errors" in checked) Object.assign(errors, checked.errors);
    const ttl = validateTtl(req.ttlSeconds);
    if (!ttl.ok) errors.ttl_seconds = ttl.error;
    const callbackError = req.statusCallback
      ? checkCallbackUrl("statusCallback", req.statusCallback)
      : undefined;
    if (callbackError) errors.status_callback = callbackError;
    const refError = req.clientRef !== undefined ? clientRefError(req.clientRef) : undefined;
    if (refError) errors.client_ref = refError;
    const when = req.sendTime
      ? checkSendAt(timestampDate(req.sendTime), store.clock.now())
      : ({ ok: true, sendAt: undefined } as const);
    if (!when.ok) errors.send_time = when.error;
    if (Object.keys(errors).length > 0 || !("message" in checked) || !ttl.ok || !when.ok) {
      deps.intake?.rejected("invalid", 1, "message" in checked ? checked.message.partCount : 0);
      throw invalidArgument(errors);
    }
    const message = checked.message;
    const amountMicros = message.partCount * message.destination.pricePerPartMicros;
    // The account's own controls, from its cached view: no read on the send's path.
    const refusal = spendRefusal(account.spendControls, {
      country: message.destination.country,
      priceMicros: amountMicros,
    });
    if (refusal) {
      deps.intake?.rejected("spend_controls", 1, message.partCount);
      throw spendRefused(refusal);
    }
    const risk = deps.risk;
    const verdict = risk?.guard.check(account.apiKey, message.to, account.riskOverrides) ?? "ok";
    if (verdict === "refused") {
      deps.intake?.rejected("toll_fraud", 1, message.partCount);
      deps.intake?.riskFlagged?.("refused", 1);
      risk?.events.keep([riskEvent(risk.guard, account.apiKey, message.to, "refused")]);
      throw tollFraudRefused();
    }
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
    const hold = await quietHoursHold(account, message, when.sendAt ?? now, req.ignoreQuietHours);
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
        clientRef: req.clientRef,
        sendAt: when.sendAt,
        holdUntil: hold,
      },
      now,
    );
    if (verdict === "flagged") doc.risk = "prefix_burst";
    // Charged and stamped when the writer issues its group (store/message-writer.ts), within
    // the daily limit held by the debit's own filter.
    const dailyLimit = account.spendControls?.dailySpendLimitMicros;
    let written = await deps.writer.write(
      account.apiKey,
      amountMicros,
      doc,
      deadline,
      check?.listVersion,
      dailyLimit,
    );
    if (written === "stale") {
      // The list changed since it was found empty: read, and write without the condition.
      deps.sendChecks?.forget(account.apiKey);
      const listed = await deps.optedOut?.(account.apiKey, [message.to], deadline.options());
      if (listed && listed.size > 0) throw refuse();
      written = await deps.writer.write(
        account.apiKey,
        amountMicros,
        doc,
        deadline,
        undefined,
        dailyLimit,
      );
    }
    const creditRemaining = await confirmCharge(
      deps,
      account.apiKey,
      { amountMicros },
      written === "stale" ? "busy" : written,
      doc.deliveryAt ?? now,
      now,
      { messages: 1, parts: message.partCount },
    );
    if (verdict === "flagged" && risk) {
      deps.intake?.riskFlagged?.("flagged", 1);
      risk.events.keep([riskEvent(risk.guard, account.apiKey, message.to, "flagged", id)]);
    }
    // The whole resource as stored, and the balance this charge left.
    const resource = messageResource(doc);
    resource.creditRemainingMicros = creditRemaining;
    return { message: resource };
  };
}
