import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Batch, SendBatchResponse } from "../../gen/sms/v1/messaging_pb.ts";
import type { Message } from "../../gen/sms/v1/types_pb.ts";
import { type BatchCounters, batchCounters as countersOf } from "../domain/message-status.ts";
import { statusNameOf } from "../domain/status-codes.ts";
import { COUNTED_REQUEST } from "../services/call-guards.ts";
import { BATCH_SUMMARY } from "../services/message-lists.ts";
import { BATCH_MESSAGE_PAGES } from "../services/page-tokens.ts";
import { MICROS } from "../store/accounts.ts";
import { FORM, RequestParseError } from "./body-parsers.ts";
import { serviceCall } from "./call-options.ts";
import { getBatchSchema, sendBatchSchema, sendMessageSchema } from "./message-schemas.ts";
import { quoteRoutes } from "./quotes.ts";
import type { ServiceClients } from "./service-clients.ts";

interface Credentials {
  apiKey: string;
  apiSecret: string;
}

interface SendMessageBody extends Credentials {
  to: string;
  from?: string;
  text: string;
  ttl?: number;
  statusCallback?: string;
}

interface SendBatchBody extends Credentials {
  messages: { to?: string; from?: string; text?: string }[];
  from?: string;
  statusCallback?: string;
  name?: string;
}

/** Form values are text: a ttl of digits becomes the integer the schema expects; "" is absent. */
async function formTtlToInteger(request: FastifyRequest): Promise<void> {
  if (!isForm(request)) return;
  const body = request.body as Record<string, unknown> | undefined;
  if (typeof body?.ttl !== "string") return;
  if (body.ttl === "") delete body.ttl;
  else if (/^[0-9]{1,10}$/.test(body.ttl)) body.ttl = Number(body.ttl);
}

const isForm = (request: FastifyRequest) =>
  request.headers["content-type"]?.toLowerCase().startsWith(FORM) ?? false;

/** The body parsers accept forms on every route; POST /sms-batch takes JSON only. */
async function jsonOnly(request: FastifyRequest): Promise<void> {
  if (!/^application\/json\b/i.test(request.headers["content-type"] ?? "")) {
    throw new RequestParseError(
      `POST /sms-batch accepts application/json only, not ${request.headers["content-type"] ?? "no content type"}`,
    );
  }
}

export function renderMessage(message: Message) {
  return {
    id: Number(message.id),
    to: message.to,
    from: message.sender,
    text: message.text,
    status: statusNameOf(message.status) ?? "ACCEPTED",
    ...(message.segments.length > 0 && {
      segments: message.segments.map((s) => ({ id: Number(s.id), text: s.text })),
    }),
    creditRemaining: units(message.creditRemainingMicros),
  };
}

/** The spec's JSON number in account currency, from the contract's integer micro-units. */
const units = (micros: bigint | undefined) => Number(micros ?? 0n) / MICROS;

function renderBatch({ batch, errors }: SendBatchResponse) {
  if (!batch) throw new Error("SendBatch returned no batch");
  return {
    id: Number(batch.id),
    name: batch.name,
    totalCount: batch.totalCount,
    acceptedCount: batch.acceptedCount,
    rejectedCount: batch.rejectedCount,
    ...(errors.length > 0 && {
      errors: errors.map((e) => ({ index: e.index, text: e.text })),
    }),
  };
}

/**
 * A batch's counters as the spec names them (REST and the dashboard show the same), its progress
 * from GetBatch unless given.
 */
export function batchCounters(
  batch: Batch,
  progress: Omit<BatchCounters, "isActive"> | undefined = batch.progress,
) {
  return {
    totalCount: batch.totalCount,
    acceptedCount: batch.acceptedCount,
    rejectedCount: batch.rejectedCount,
    sentCount: progress?.sentCount ?? 0,
    deliveredCount: progress?.deliveredCount ?? 0,
    undeliveredCount: progress?.undeliveredCount ?? 0,
  };
}

function renderBatchInfo(batch: Batch, messages: Message[]) {
  const rendered = messages.map((m) => ({
    id: Number(m.id),
    from: m.sender,
    to: m.to,
    status: statusNameOf(m.status) ?? "ACCEPTED",
  }));
  const progress = countersOf(rendered.map((m) => m.status));
  return {
    id: Number(batch.id),
    name: batch.name,
    ...batchCounters(batch, progress),
    messages: rendered,
    isActive: progress.isActive,
  };
}

export function messageRoutes(
  app: FastifyInstance,
  clients: ServiceClients,
  batchBodyLimit: number,
): void {
  app.post<{ Body: SendMessageBody }>(
    "/sms",
    { schema: sendMessageSchema, preValidation: formTtlToInteger },
    async (request, reply) => {
      const { to, from, text, ttl, statusCallback } = request.body;
      const { message } = await clients.messaging.sendMessage(
        { to, sender: from, text, ttlSeconds: ttl, statusCallback },
        serviceCall(request, reply, request.body),
      );
      if (!message) throw new Error("SendMessage returned no message");
      return renderMessage(message);
    },
  );

  app.post<{ Body: SendBatchBody }>(
    "/sms-batch",
    {
      schema: sendBatchSchema,
      bodyLimit: batchBodyLimit,
      preValidation: jsonOnly,
      config: { stringErrors: true },
    },
    async (request, reply) => {
      const { messages, from, statusCallback, name } = request.body;
      const answer = await clients.messaging.sendBatch(
        {
          messages: messages.map((m) => ({ to: m.to ?? "", sender: m.from, text: m.text ?? "" })),
          sender: from,
          statusCallback,
          name,
        },
        serviceCall(request, reply, request.body),
      );
      return renderBatch(answer);
    },
  );

  app.get<{ Params: { id: string }; Querystring: Credentials }>(
    "/sms-batch/:id",
    { schema: getBatchSchema },
    async (request, reply) => {
      const id = BigInt(request.params.id);
      // The counters are those of the statuses listed (BATCH_SUMMARY): one read of the messages.
      const batchCall = serviceCall(request, reply, request.query);
      batchCall.contextValues?.set(BATCH_SUMMARY, true);
      const { batch } = await clients.messaging.getBatch({ id }, batchCall);
      if (!batch) throw new Error("GetBatch returned no batch");
      // The spec answers every message inline (at most 10000): the batch's list, in one page.
      const messages: Message[] = [];
      let pageToken = "";
      do {
        const call = serviceCall(request, reply, request.query);
        call.contextValues?.set(COUNTED_REQUEST, true);
        call.contextValues?.set(BATCH_SUMMARY, true);
        const page = await clients.messaging.listBatchMessages(
          { batchId: id, pageSize: BATCH_MESSAGE_PAGES.max, pageToken },
          call,
        );
        messages.push(...page.messages);
        pageToken = page.nextPageToken;
      } while (pageToken !== "");
      return renderBatchInfo(batch, messages);
    },
  );

  quoteRoutes(app, clients);
}
