import { batchCounters } from "../domain/message-status.ts";
import { notFound } from "../errors/api-errors.ts";
import { authenticateAccount } from "./authentication.ts";
import { cancels } from "./cancel.ts";
import { deadlineOf } from "./database-deadlines.ts";
import { BATCH_SUMMARY, batchNotFound, messageLists } from "./message-lists.ts";
import { quoteMessage } from "./message-quotes.ts";
import { batchResource, messageResource } from "./message-resources.ts";
import { type MessagingDeps, type MessagingImpl, timeoutsOf } from "./messaging-deps.ts";
import { sendBatch } from "./send-batch.ts";
import { sendMessage } from "./send-message.ts";

/** MessagingService: one function an RPC (send-message.ts, send-batch.ts, message-lists.ts). */
export function createMessagingService(deps: MessagingDeps): MessagingImpl {
  const { store, directory, policy } = deps;
  const timeouts = timeoutsOf(deps);

  return {
    ...messageLists({ store, directory, requestMs: timeouts.requestMs }),
    ...cancels(deps),
    sendMessage: sendMessage(deps),
    sendBatch: sendBatch(deps),

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
