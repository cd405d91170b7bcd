import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import type { Batch, ListMessagesRequestSchema } from "../../gen/sms/v1/messaging_pb.ts";
import type { Message } from "../../gen/sms/v1/types_pb.ts";
import type { StatusName } from "../domain/message-status.ts";
import { STATUS_NAMES } from "../domain/message-status.ts";
import { isValidPhoneNumber, PHONE_NUMBER_ERROR } from "../domain/phone-numbers.ts";
import { STATUS_TO_PROTO } from "../domain/status-codes.ts";
import { batchCounters } from "../rest/messages.ts";
import {
  badId,
  type Dashboard,
  type FieldErrorList,
  ID,
  searchPage,
  fieldText as text,
  timeFieldError,
  utcTimeOf,
} from "./page-kit.ts";
import { sessionCall } from "./session.ts";
import {
  attemptRows,
  creditText,
  notificationState,
  priceText,
  reasonOf,
  STATUS_MEANINGS,
  statusName,
  timeText,
} from "./wording.ts";

// Messages and batches, read with the lists of MessagingService (keyset pages on the listing
// indexes): searching, one message with its history and webhook attempts, batches with progress.

type ListMessagesInit = MessageInitShape<typeof ListMessagesRequestSchema>;

const MESSAGES_PER_PAGE = 25;
const BATCHES_PER_PAGE = 10;
const BATCH_MESSAGES_PER_PAGE = 50;

interface MessageSearch {
  to: string;
  status: string;
  batch: string;
  from: string;
  until: string;
  page: string;
}

/** The search form's fields as a ListMessages request, or the spec-shaped errors of the bad ones. */
export function searchRequest(
  search: MessageSearch,
): { request: ListMessagesInit } | { errors: FieldErrorList } {
  const errors: FieldErrorList = {};
  const request: ListMessagesInit = {
    pageSize: MESSAGES_PER_PAGE,
    pageToken: search.page,
  };
  if (search.to !== "") {
    if (isValidPhoneNumber(search.to)) request.to = search.to;
    else errors.to = [PHONE_NUMBER_ERROR];
  }
  if (search.status !== "") {
    if ((STATUS_NAMES as readonly string[]).includes(search.status)) {
      request.status = STATUS_TO_PROTO[search.status as StatusName];
    } else errors.status = [`status must be one of ${STATUS_NAMES.join(", ")}`];
  }
  if (search.batch !== "") {
    if (ID.test(search.batch)) request.batchId = BigInt(search.batch);
    else errors.batch = ["batch must be a batch id: a positive integer"];
  }
  for (const field of ["from", "until"] as const) {
    if (search[field] === "") continue;
    const time = utcTimeOf(search[field]);
    if (!time) errors[field] = [timeFieldError(field)];
    else if (field === "from") request.startTime = timestampFromDate(time);
    else request.endTime = timestampFromDate(time);
  }
  return Object.keys(errors).length > 0 ? { errors } : { request };
}

function messageRow(message: Message) {
  const parts = Math.max(1, message.segments.length);
  return {
    id: message.id.toString(),
    to: message.to,
    from: message.sender,
    status: statusName(message.status),
    reason: reasonOf(message.nonDeliveryReason)?.name ?? "",
    batchId: message.batchId?.toString() ?? "",
    created: timeText(message.createTime),
    text: message.text,
    country: message.country,
    price: priceText(parts, message.pricePerPartMicros),
    clientRef: message.clientRef,
    sendAt: timeText(message.sendTime),
    holdUntil: timeText(message.holdUntilTime),
    // Cancel is offered while it is ACCEPTED; the service refuses it once a worker has it.
    cancelable: statusName(message.status) === "ACCEPTED",
  };
}

/** Scheduled messages are ACCEPTED ones due later: at their sendAt, or held by quiet hours. */
const SCHEDULED_PAGE = 100;

function batchRow(batch: Batch) {
  const counters = batchCounters(batch);
  return {
    id: batch.id.toString(),
    name: batch.name,
    created: timeText(batch.createTime),
    ...counters,
    isActive: batch.progress?.isActive ?? false,
    done: counters.deliveredCount + counters.undeliveredCount,
  };
}

export function messagePages(app: FastifyInstance, dashboard: Dashboard): void {
  const { messaging } = dashboard.deps.clients;

  app.get(
    "/messages",
    dashboard.signedIn(async (request, reply, account) => {
      const query = request.query as Record<string, unknown>;
      const search: MessageSearch = {
        to: text(query.to),
        status: text(query.status),
        batch: text(query.batch),
        from: text(query.from),
        until: text(query.until),
        page: text(query.page),
      };
      return searchPage(
        dashboard,
        reply,
        account,
        { name: "messages", data: { title: "Messages", nav: "messages", statuses: STATUS_NAMES } },
        search,
        searchRequest(search),
        async (listRequest) => {
          const found = await messaging.listMessages(listRequest, sessionCall(request, account));
          return { rows: found.messages.map(messageRow), nextPageToken: found.nextPageToken };
        },
      );
    }),
  );

  app.get(
    "/scheduled",
    dashboard.signedIn(async (request, reply, account) => {
      const pageToken = text((request.query as Record<string, unknown>).page);
      const found = await messaging.listMessages(
        { status: STATUS_TO_PROTO.ACCEPTED, pageSize: SCHEDULED_PAGE, pageToken },
        sessionCall(request, account),
      );
      const now = Date.now();
      const later = (m: Message) =>
        [m.sendTime, m.holdUntilTime].some((t) => t && timestampDate(t).getTime() > now);
      return dashboard.render(
        reply,
        "scheduled",
        {
          title: "Scheduled",
          nav: "scheduled",
          messages: found.messages.filter(later).map(messageRow),
          next: found.nextPageToken,
        },
        account,
      );
    }),
  );

  app.post(
    "/messages/:id/cancel",
    { preValidation: app.csrfProtection },
    dashboard.signedIn(async (request, reply, account) => {
      const { id } = request.params as { id: string };
      if (!ID.test(id)) return badId(dashboard, reply, account, "message");
      await messaging.cancelMessage({ id: BigInt(id) }, sessionCall(request, account));
      return reply.redirect(`/dashboard/messages/${id}`, 303);
    }),
  );

  app.get(
    "/messages/:id",
    dashboard.signedIn(async (request, reply, account) => {
      const { id } = request.params as { id: string };
      if (!ID.test(id)) return badId(dashboard, reply, account, "message");
      const { message } = await messaging.getMessage(
        { id: BigInt(id) },
        sessionCall(request, account),
      );
      if (!message) throw new Error("the service returned no message");
      const status = statusName(message.status);
      return dashboard.render(
        reply,
        "message",
        {
          title: `Message ${id}`,
          nav: "messages",
          message: messageRow(message),
          statusMeaning: STATUS_MEANINGS[status as StatusName] ?? "",
          reason: reasonOf(message.nonDeliveryReason),
          carrierStatus: message.carrierStatus,
          ttlSeconds: message.ttlSeconds,
          statusCallback: message.statusCallback,
          updated: timeText(message.updateTime),
          pricePerPart: creditText(message.pricePerPartMicros ?? 0n),
          parts: message.segments.map((s) => ({ id: s.id.toString(), text: s.text })),
          history: message.notifications.map((n) => ({
            status: statusName(n.status),
            at: timeText(n.createTime),
            state: notificationState(n.state),
            url: n.url,
            nextAttempt: timeText(n.nextAttemptTime),
            attempts: attemptRows(n.attempts),
          })),
        },
        account,
      );
    }),
  );

  app.get(
    "/batches",
    dashboard.signedIn(async (request, reply, account) => {
      const call = sessionCall(request, account);
      const pageToken = text((request.query as Record<string, unknown>).page);
      const found = await messaging.listBatches({ pageSize: BATCHES_PER_PAGE, pageToken }, call);
      // The list has no progress; each batch's comes from GetBatch, counted from its messages.
      const batches = await Promise.all(
        found.batches.map(async (b) => (await messaging.getBatch({ id: b.id }, call)).batch ?? b),
      );
      return dashboard.render(
        reply,
        "batches",
        {
          title: "Batches",
          nav: "batches",
          batches: batches.map(batchRow),
          next: found.nextPageToken,
        },
        account,
      );
    }),
  );

  app.get(
    "/batches/:id",
    dashboard.signedIn(async (request, reply, account) => {
      const { id } = request.params as { id: string };
      if (!ID.test(id)) return badId(dashboard, reply, account, "batch");
      const call = sessionCall(request, account);
      const pageToken = text((request.query as Record<string, unknown>).page);
      const { batch } = await messaging.getBatch({ id: BigInt(id) }, call);
      if (!batch) throw new Error("the service returned no batch");
      const found = await messaging.listBatchMessages(
        { batchId: BigInt(id), pageSize: BATCH_MESSAGES_PER_PAGE, pageToken },
        call,
      );
      return dashboard.render(
        reply,
        "batch",
        {
          title: `Batch ${id}`,
          nav: "batches",
          batch: batchRow(batch),
          messages: found.messages.map(messageRow),
          next: found.nextPageToken,
        },
        account,
      );
    }),
  );
}
