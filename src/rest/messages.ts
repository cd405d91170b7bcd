import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Batch, BatchInfo } from "../../gen/sms/v1/messaging_pb.ts";
import { type Message, MessageStatus } from "../../gen/sms/v1/types_pb.ts";
import { FORM, RequestParseError } from "./body-parsers.ts";
import { serviceCall } from "./call-options.ts";
import { getBatchSchema, sendBatchSchema, sendMessageSchema } from "./schemas.ts";
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

export const STATUS_NAME: Record<MessageStatus, string> = {
  [MessageStatus.UNSPECIFIED]: "ACCEPTED",
  [MessageStatus.ACCEPTED]: "ACCEPTED",
  [MessageStatus.SENT]: "SENT",
  [MessageStatus.DELIVERED]: "DELIVERED",
  [MessageStatus.SEND_ERROR]: "SEND_ERROR",
  [MessageStatus.DELIVERY_ERROR]: "DELIVERY_ERROR",
};

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
    from: message.from,
    text: message.text,
    status: STATUS_NAME[message.status],
    ...(message.segments.length > 0 && {
      segments: message.segments.map((s) => ({ id: Number(s.id), text: s.text })),
    }),
    creditRemaining: message.creditRemaining,
  };
}

function renderBatch(batch: Batch) {
  return {
    id: Number(batch.id),
    name: batch.name,
    totalCount: batch.totalCount,
    acceptedCount: batch.acceptedCount,
    rejectedCount: batch.rejectedCount,
    ...(batch.errors.length > 0 && {
      errors: batch.errors.map((e) => ({ index: e.index, text: e.text })),
    }),
  };
}

function renderBatchInfo(batch: BatchInfo) {
  return {
    id: Number(batch.id),
    name: batch.name,
    totalCount: batch.totalCount,
    acceptedCount: batch.acceptedCount,
    rejectedCount: batch.rejectedCount,
    sentCount: batch.sentCount,
    deliveredCount: batch.deliveredCount,
    undeliveredCount: batch.undeliveredCount,
    messages: batch.messages.map((m) => ({
      id: Number(m.id),
      from: m.from,
      to: m.to,
      status: STATUS_NAME[m.status],
    })),
    isActive: batch.isActive,
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
        { to, from, text, ttl, statusCallback },
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
      const { batch } = await clients.messaging.sendBatch(
        {
          messages: messages.map((m) => ({ to: m.to ?? "", from: m.from, text: m.text ?? "" })),
          from,
          statusCallback,
          name,
        },
        serviceCall(request, reply, request.body),
      );
      if (!batch) throw new Error("SendBatch returned no batch");
      return renderBatch(batch);
    },
  );

  app.get<{ Params: { id: string }; Querystring: Credentials }>(
    "/sms-batch/:id",
    { schema: getBatchSchema },
    async (request, reply) => {
      const { batch } = await clients.messaging.getBatch(
        { id: BigInt(request.params.id) },
        serviceCall(request, reply, request.query),
      );
      if (!batch) throw new Error("GetBatch returned no batch");
      return renderBatchInfo(batch);
    },
  );
}
