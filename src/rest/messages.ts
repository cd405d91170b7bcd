import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Batch, SendBatchResponse } from "../../gen/sms/v1/messaging_pb.ts";
import { type Message, MessageStatus, MessageView } from "../../gen/sms/v1/types_pb.ts";
import {
  type BatchCounters,
  batchCounters as countersOf,
  isStatusName,
} from "../domain/message-status.ts";
import { reasonNameOf, STATUS_TO_PROTO, statusNameOf } from "../domain/status-codes.ts";
import { invalidArgument } from "../errors/api-errors.ts";
import { COUNTED_REQUEST } from "../services/call-guards.ts";
import { BATCH_SUMMARY } from "../services/message-lists.ts";
import { BATCH_MESSAGE_PAGES } from "../services/page-tokens.ts";
import { MICROS } from "../store/accounts.ts";
import { FORM, RequestParseError } from "./body-parsers.ts";
import { serviceCall } from "./call-options.ts";
import {
  cancelBatchSchema,
  cancelMessageSchema,
  getMessageSchema,
  listMessagesSchema,
} from "./message-read-schemas.ts";
import { getBatchSchema, sendBatchSchema, sendMessageSchema } from "./message-schemas.ts";
import { type PageQuery, pageRequest, restPage } from "./paging.ts";
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
  clientRef?: string | null;
  sendAt?: string | null;
  ignoreQuietHours?: boolean | string | null;
}

interface SendBatchBody extends Credentials {
  messages: { to?: string; from?: string; text?: string; clientRef?: string | null }[];
  from?: string;
  statusCallback?: string;
  name?: string;
  clientRef?: string | null;
  sendAt?: string | null;
  ignoreQuietHours?: boolean | null;
}

interface ListQuery extends Credentials, PageQuery {
  to?: string;
  status?: string;
  batchId?: string;
  clientRef?: string;
  since?: string;
  until?: string;
  pageSize?: string;
}

/** RFC 3339 with an offset: what sendAt must be (a bare date or a local time is ambiguous). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** sendAt as the contract's Timestamp; a malformed one is the service's field error. */
function sendTimeOf(sendAt: string | null | undefined): { sendTime?: Timestamp } {
  if (sendAt === undefined || sendAt === null || sendAt === "") return {};
  const at = RFC3339.test(sendAt) ? new Date(sendAt) : new Date(Number.NaN);
  if (Number.isNaN(at.getTime())) throw sendAtError();
  return { sendTime: timestampFromDate(at) };
}

const sendAtError = () =>
  invalidArgument({
    send_time: "sendAt must be an RFC 3339 time with offset, such as 2026-12-01T09:00:00+01:00",
  });

/** An optional string parameter: null and "" are absent. */
const given = (value: string | null | undefined) =>
  value === null || value === undefined || value === "" ? undefined : value;

const isoTime = (time: Timestamp | undefined) => (time ? timestampDate(time).toISOString() : "");

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
    ...(message.clientRef && { clientRef: message.clientRef }),
    ...(message.sendTime && { sendAt: isoTime(message.sendTime) }),
  };
}

/** A message as GET /sms lists it (docs/design.md "Message reads, ..."). */
export function renderMessageRead(message: Message) {
  const parts = Math.max(1, message.segments.length);
  const reason = reasonNameOf(message.nonDeliveryReason);
  return {
    id: Number(message.id),
    to: message.to,
    from: message.sender,
    text: message.text,
    status: statusNameOf(message.status) ?? "ACCEPTED",
    ...(reason && { reason }),
    parts,
    ...(message.segments.length > 0 && {
      segments: message.segments.map((s) => ({ id: Number(s.id), text: s.text })),
    }),
    ...(message.batchId !== undefined && { batchId: Number(message.batchId) }),
    ...(message.clientRef && { clientRef: message.clientRef }),
    price: units((message.pricePerPartMicros ?? 0n) * BigInt(parts)),
    createTime: isoTime(message.createTime),
    ...(message.sendTime && { sendAt: isoTime(message.sendTime) }),
    ...(message.holdUntilTime && { holdUntil: isoTime(message.holdUntilTime) }),
  };
}

/** GET /sms/{id}: the listed fields, every status it took with its time, the carrier's words. */
function renderMessageDetail(message: Message) {
  const reason = reasonNameOf(message.nonDeliveryReason);
  return {
    ...renderMessageRead(message),
    statusHistory: message.notifications.map((n) => {
      const status = statusNameOf(n.status) ?? "ACCEPTED";
      return {
        status,
        time: isoTime(n.createTime),
        ...(status === "DELIVERY_ERROR" && reason && { reason }),
      };
    }),
    ...(message.carrierStatus && {
      carrierStatus: {
        stat: message.carrierStatus.stat,
        err: message.carrierStatus.err,
        ...(message.carrierStatus.networkErrorCode !== undefined && {
          networkErrorCode: message.carrierStatus.networkErrorCode,
        }),
        doneTime: message.carrierStatus.doneTime,
      },
    }),
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
    canceledCount: progress?.canceledCount ?? 0,
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
      const { to, from, text, ttl, statusCallback, clientRef, sendAt } = request.body;
      // A form's value is text: "true" is true.
      const ignore = request.body.ignoreQuietHours;
      const ignoreQuietHours = ignore === true || ignore === "true";
      const ref = given(clientRef);
      const { message } = await clients.messaging.sendMessage(
        {
          to,
          sender: from,
          text,
          ttlSeconds: ttl,
          statusCallback,
          ...(ref !== undefined && { clientRef: ref }),
          ...sendTimeOf(sendAt),
          ignoreQuietHours,
        },
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
      const { messages, from, statusCallback, name, clientRef, sendAt } = request.body;
      const ref = given(clientRef);
      const answer = await clients.messaging.sendBatch(
        {
          messages: messages.map((m) => {
            const own = given(m.clientRef);
            return {
              to: m.to ?? "",
              sender: m.from,
              text: m.text ?? "",
              ...(own !== undefined && { clientRef: own }),
            };
          }),
          sender: from,
          statusCallback,
          name,
          ...(ref !== undefined && { clientRef: ref }),
          ...sendTimeOf(sendAt),
          ignoreQuietHours: request.body.ignoreQuietHours === true,
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

  app.get<{ Querystring: ListQuery }>(
    "/sms",
    { schema: listMessagesSchema },
    async (request, reply) => {
      const q = request.query;
      const status = q.status && isStatusName(q.status) ? STATUS_TO_PROTO[q.status] : undefined;
      const page = await clients.messaging.listMessages(
        {
          to: q.to ?? "",
          status: status ?? MessageStatus.UNSPECIFIED,
          ...(q.batchId && { batchId: BigInt(q.batchId) }),
          clientRef: q.clientRef ?? "",
          ...(q.since && { startTime: timestampFromDate(new Date(q.since)) }),
          ...(q.until && { endTime: timestampFromDate(new Date(q.until)) }),
          pageSize: q.pageSize ? Number(q.pageSize) : 100,
          view: MessageView.BASIC,
          ...pageRequest(q),
        },
        serviceCall(request, reply, q),
      );
      return restPage("messages", page.messages.map(renderMessageRead), page);
    },
  );

  app.get<{ Params: { id: string }; Querystring: Credentials }>(
    "/sms/:id",
    { schema: getMessageSchema },
    async (request, reply) => {
      const { message } = await clients.messaging.getMessage(
        { id: BigInt(request.params.id) },
        serviceCall(request, reply, request.query),
      );
      if (!message) throw new Error("GetMessage returned no message");
      return renderMessageDetail(message);
    },
  );

  app.post<{ Params: { id: string }; Body: Credentials }>(
    "/sms/:id/cancel",
    { schema: cancelMessageSchema },
    async (request, reply) => {
      const { message } = await clients.messaging.cancelMessage(
        { id: BigInt(request.params.id) },
        serviceCall(request, reply, request.body),
      );
      if (!message) throw new Error("CancelMessage returned no message");
      return renderMessageRead(message);
    },
  );

  app.post<{ Params: { id: string }; Body: Credentials }>(
    "/sms-batch/:id/cancel",
    { schema: cancelBatchSchema },
    async (request, reply) => {
      const answer = await clients.messaging.cancelBatch(
        { id: BigInt(request.params.id) },
        serviceCall(request, reply, request.body),
      );
      return {
        id: Number(answer.id),
        canceledCount: answer.canceledCount,
        notCanceledCount: answer.notCanceledCount,
      };
    },
  );

  quoteRoutes(app, clients);
}
