import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FastifyInstance } from "fastify";
import type { ListInboundMessagesRequestSchema } from "../../gen/sms/v1/inbound_pb.ts";
import { type InboundMessage, NotificationState } from "../../gen/sms/v1/types_pb.ts";
import {
  badId,
  type Dashboard,
  type FieldErrorList,
  fieldText,
  ID,
  searchPage,
  timeFieldError,
  utcTimeOf,
} from "./page-kit.ts";
import { sessionCall } from "./session.ts";
import {
  attemptRows,
  notificationState,
  OPT_OUT_MEANINGS,
  optOutTypeName,
  timeText,
} from "./wording.ts";

// Messages handsets sent to the account's numbers, read with InboundService (docs/design.md "Two-way
// messaging": "Reading"): searching by sender, number and time in AIP-158 pages, and one message.

type ListInboundInit = MessageInitShape<typeof ListInboundMessagesRequestSchema>;

const INBOUND_PER_PAGE = 25;
/** Longer than any number the carrier hands over; a search past it cannot match. */
const NUMBER_MAX_CHARS = 32;

interface InboundSearch {
  /** The handset. */
  from: string;
  /** The account's number. */
  to: string;
  since: string;
  until: string;
  page: string;
}

/** The search form's fields as a ListInboundMessages request, or the errors of the bad ones. */
export function inboundSearchRequest(
  search: InboundSearch,
): { request: ListInboundInit } | { errors: FieldErrorList } {
  const errors: FieldErrorList = {};
  const request: ListInboundInit = { pageSize: INBOUND_PER_PAGE, pageToken: search.page };
  // Compared exactly by the service: numbers as the carrier gave them, short codes included.
  for (const field of ["from", "to"] as const) {
    if (search[field].length > NUMBER_MAX_CHARS) {
      errors[field] = [`${field} must be at most ${NUMBER_MAX_CHARS} characters`];
    }
  }
  if (search.from !== "") request.sender = search.from;
  if (search.to !== "") request.to = search.to;
  for (const field of ["since", "until"] as const) {
    if (search[field] === "") continue;
    const time = utcTimeOf(search[field]);
    if (!time) errors[field] = [timeFieldError(field)];
    else if (field === "since") request.startTime = timestampFromDate(time);
    else request.endTime = timestampFromDate(time);
  }
  return Object.keys(errors).length > 0 ? { errors } : { request };
}

function inboundRow(message: InboundMessage) {
  const optOutType = optOutTypeName(message.optOutType);
  return {
    id: message.id.toString(),
    from: message.sender,
    to: message.to,
    text: message.text,
    parts: message.parts,
    received: timeText(message.receiveTime),
    optOutType,
    optOutMeaning: optOutType ? OPT_OUT_MEANINGS[optOutType] : "",
    incomplete: message.incomplete,
  };
}

export function inboundPages(app: FastifyInstance, dashboard: Dashboard): void {
  const { inbound } = dashboard.deps.clients;

  app.get(
    "/inbound",
    dashboard.signedIn(async (request, reply, account) => {
      const query = request.query as Record<string, unknown>;
      const search: InboundSearch = {
        from: fieldText(query.from),
        to: fieldText(query.to),
        since: fieldText(query.since),
        until: fieldText(query.until),
        page: fieldText(query.page),
      };
      return searchPage(
        dashboard,
        reply,
        account,
        { name: "inbound", data: { title: "Inbound messages", nav: "inbound" } },
        search,
        inboundSearchRequest(search),
        async (listRequest) => {
          const found = await inbound.listInboundMessages(
            listRequest,
            sessionCall(request, account),
          );
          return {
            rows: found.inboundMessages.map(inboundRow),
            nextPageToken: found.nextPageToken,
          };
        },
      );
    }),
  );

  app.get(
    "/inbound/:id",
    dashboard.signedIn(async (request, reply, account) => {
      const { id } = request.params as { id: string };
      if (!ID.test(id)) return badId(dashboard, reply, account, "inbound message");
      const { inboundMessage } = await inbound.getInboundMessage(
        { id: BigInt(id) },
        sessionCall(request, account),
      );
      if (!inboundMessage) throw new Error("the service returned no inbound message");
      const webhook = inboundMessage.webhook;
      return dashboard.render(
        reply,
        "inbound-message",
        {
          title: `Inbound message ${id}`,
          nav: "inbound",
          message: inboundRow(inboundMessage),
          // As a message's status webhooks are shown (message-pages.ts).
          webhook: webhook && {
            state:
              webhook.state === NotificationState.SKIPPED
                ? "skipped (no inbound URL)"
                : notificationState(webhook.state),
            url: webhook.url,
            nextAttempt: timeText(webhook.nextAttemptTime),
            attempts: attemptRows(webhook.attempts),
          },
        },
        account,
      );
    }),
  );
}
