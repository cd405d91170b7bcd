// Fixtures of the inbound and opt-out list tests: the Connect clients of a running service, and a
// Connect list read page by page (AIP-158: `pageSize`, then each `nextPageToken` until it is empty).
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { expect } from "vitest";
import { InboundService } from "../../gen/sms/v1/inbound_pb.ts";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { OptOutService } from "../../gen/sms/v1/opt_outs_pb.ts";
import type { RunningService } from "../support/service.ts";

/** Connect clients of the service, over one HTTP/1.1 transport. */
export function connectClients(service: RunningService) {
  const transport = createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" });
  return {
    messaging: createClient(MessagingService, transport),
    optOuts: createClient(OptOutService, transport),
    inbound: createClient(InboundService, transport),
  };
}

/** Every item of a list, in order, read `pageSize` at a time; no page may hold more. */
export async function allPages<P extends { nextPageToken: string }, I>(
  read: (paging: { pageSize: number; pageToken: string }) => Promise<P>,
  items: (page: P) => I[],
  pageSize = 2,
): Promise<I[]> {
  const all: I[] = [];
  let pageToken = "";
  do {
    const page = await read({ pageSize, pageToken });
    const got = items(page);
    expect(got.length).toBeLessThanOrEqual(pageSize);
    all.push(...got);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return all;
}
