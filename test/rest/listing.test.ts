/**
 * The lists of the contract (ListMessages, ListBatches, ListBatchMessages, ListSenderNames) over
 * Connect on a real socket and a real database: newest first, filters, page sizes, page tokens
 * that stay right while messages keep arriving, and only ever the caller's own account.
 */
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { SenderNameService } from "../../gen/sms/v1/sender_names_pb.ts";
import {
  type Message,
  MessageStatus,
  MessageView,
  SenderNameOwnerType,
  SenderNamePurpose,
} from "../../gen/sms/v1/types_pb.ts";
import { basicAuthorization } from "../../src/services/authentication.ts";
import { failure } from "../support/error-details.ts";
import { type RunningService, startService } from "../support/service.ts";
import type { Account } from "./helpers.ts";

let service: RunningService;
let messaging: ReturnType<typeof createClient<typeof MessagingService>>;
let senderNames: ReturnType<typeof createClient<typeof SenderNameService>>;

beforeAll(async () => {
  service = await startService();
  const transport = createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" });
  messaging = createClient(MessagingService, transport);
  senderNames = createClient(SenderNameService, transport);
});
afterAll(() => service?.close());

const auth = (who: Account) => ({
  headers: { authorization: basicAuthorization(who.apiKey, who.apiSecret) },
});

/** Sends `count` single messages to `to` (one after another, so creation times are ordered). */
async function sendSingles(who: Account, count: number, to = "+4915112345678"): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; i < count; i++) {
    const { message } = await messaging.sendMessage({ to, text: `single ${i}` }, auth(who));
    ids.push(message?.id ?? 0n);
  }
  return ids;
}

/** Every page of a message list, following the tokens; `between` runs before each next page. */
async function allPages(
  list: (pageToken: string) => Promise<{ messages: Message[]; nextPageToken: string }>,
  between: () => Promise<unknown> = async () => undefined,
): Promise<{ pages: Message[][] }> {
  const pages: Message[][] = [];
  let token = "";
  do {
    const page = await list(token);
    pages.push(page.messages);
    token = page.nextPageToken;
    if (token) await between();
  } while (token);
  return { pages };
}

const createdAt = (m: Message | undefined): Date => {
  if (!m?.createTime) throw new Error("a message without create_time");
  return timestampDate(m.createTime);
};

/** Newest first: (create_time, id) strictly descending. */
function newestFirst(messages: Message[]): boolean {
  return messages.every((m, i) => {
    const before = messages[i - 1];
    if (!before) return true;
    const [a, b] = [createdAt(before), createdAt(m)];
    return a > b || (a.getTime() === b.getTime() && before.id > m.id);
  });
}

describe("ListMessages", () => {
  it("lists the caller's messages newest first in pages of page_size, the last page without a token", async () => {
    const who = await service.createAccount();
    const sent = await sendSingles(who, 7);
    const { pages } = await allPages((pageToken) =>
      messaging.listMessages({ pageSize: 3, pageToken }, auth(who)),
    );
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    const listed = pages.flat();
    expect(listed.map((m) => m.id)).toEqual([...sent].reverse());
    expect(newestFirst(listed)).toBe(true);
    // BASIC view by default: everything but the webhook history.
    expect(listed[0]).toMatchObject({ sender: "SMSINFO", ttlSeconds: 21600, notifications: [] });
    const full = await messaging.listMessages({ pageSize: 1, view: MessageView.FULL }, auth(who));
    expect(full.messages[0]?.notifications[0]?.status).toBe(MessageStatus.ACCEPTED);
  });

  it("page_size: 0 is 100, above 1000 is 1000, negative is INVALID_ARGUMENT on page_size", async () => {
    const who = await service.createAccount({ credit: 2000 });
    await messaging.sendBatch(
      {
        messages: Array.from({ length: 1001 }, (_, i) => ({ to: "+4915100000001", text: `${i}` })),
      },
      auth(who),
    );
    expect((await messaging.listMessages({}, auth(who))).messages).toHaveLength(100);
    const big = await messaging.listMessages({ pageSize: 5000 }, auth(who));
    expect(big.messages).toHaveLength(1000);
    expect(big.nextPageToken).not.toBe("");
    const rest = await messaging.listMessages(
      { pageSize: 5000, pageToken: big.nextPageToken },
      auth(who),
    );
    expect(rest.messages).toHaveLength(1);
    expect(rest.nextPageToken).toBe("");
    expect(await failure(messaging.listMessages({ pageSize: -1 }, auth(who)))).toMatchObject({
      code: Code.InvalidArgument,
      reason: "FIELD_INVALID",
      fields: { page_size: "page_size must not be negative" },
    });
  });

  it("pages stay right while messages keep arriving: none twice, none present at the start skipped", async () => {
    const who = await service.createAccount();
    const before = await sendSingles(who, 12);
    let arriving = 0;
    const { pages } = await allPages(
      (pageToken) => messaging.listMessages({ pageSize: 4, pageToken }, auth(who)),
      // Between pages, new messages arrive (newer than every cursor), concurrently.
      () =>
        Promise.all(
          [0, 1].map(() =>
            messaging.sendMessage({ to: "+4915112345678", text: `new ${arriving++}` }, auth(who)),
          ),
        ),
    );
    const ids = pages.flat().map((m) => m.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...before].reverse());
    expect(arriving).toBe(4);
  });

  it("filters by status, recipient, batch and time range, combined with AND", async () => {
    const who = await service.createAccount();
    const [a1, a2] = await sendSingles(who, 2, "+4915100000011");
    const [b1] = await sendSingles(who, 1, "+4915100000022");
    const { batch } = await messaging.sendBatch(
      {
        messages: [
          { to: "+4915100000011", text: "in batch" },
          { to: "+4915100000033", text: "in batch" },
        ],
      },
      auth(who),
    );
    // Delivery does not run in this test service: statuses are set as the worker would.
    await service.store.messages.updateOne(
      { _id: Number(a2) },
      { $set: { status: "DELIVERED", reason: undefined } },
    );
    const ids = async (filter: Parameters<typeof messaging.listMessages>[0]) =>
      (await messaging.listMessages(filter, auth(who))).messages.map((m) => m.id);

    const batchIds = (
      await messaging.listBatchMessages({ batchId: batch?.id ?? 0n }, auth(who))
    ).messages.map((m) => m.id);
    expect(await ids({ status: MessageStatus.DELIVERED })).toEqual([a2]);
    expect(await ids({ to: "+4915100000011" })).toEqual([batchIds[0], a2, a1]);
    expect(await ids({ batchId: batch?.id })).toEqual([...batchIds].reverse());
    expect(await ids({ to: "+4915100000011", status: MessageStatus.ACCEPTED })).toEqual([
      batchIds[0],
      a1,
    ]);
    expect(await ids({ to: "+4915100000011", batchId: batch?.id })).toEqual([batchIds[0]]);

    // Time range: start inclusive, end exclusive, on create_time.
    const b1Time = createdAt((await messaging.getMessage({ id: b1 ?? 0n }, auth(who))).message);
    const since = await ids({ startTime: timestampFromDate(b1Time) });
    expect(since).toContain(b1);
    expect(since).not.toContain(a1);
    const until = await ids({ endTime: timestampFromDate(b1Time) });
    expect(until).not.toContain(b1);
    expect(until).toContain(a1);
  });

  it("a page token works only with the filters and the account it was made for", async () => {
    const who = await service.createAccount();
    const other = await service.createAccount();
    await sendSingles(who, 3);
    const first = await messaging.listMessages({ pageSize: 1 }, auth(who));
    for (const [request, caller] of [
      [{ pageSize: 1, pageToken: first.nextPageToken, to: "+4915112345678" }, who],
      [{ pageSize: 1, pageToken: first.nextPageToken }, other],
      [{ pageSize: 1, pageToken: "not-a-token" }, who],
    ] as const) {
      expect(await failure(messaging.listMessages(request, auth(caller)))).toMatchObject({
        code: Code.InvalidArgument,
        reason: "PAGE_TOKEN_INVALID",
        fields: { page_token: expect.any(String) },
      });
    }
  });

  it("shows only the caller's account, whatever the filters", async () => {
    const who = await service.createAccount();
    const other = await service.createAccount();
    const mine = await sendSingles(who, 2, "+4915100000099");
    const { batch } = await messaging.sendBatch(
      { messages: [{ to: "+4915100000099", text: "mine" }] },
      auth(who),
    );
    expect((await messaging.listMessages({}, auth(other))).messages).toEqual([]);
    expect((await messaging.listMessages({ to: "+4915100000099" }, auth(other))).messages).toEqual(
      [],
    );
    expect((await messaging.listMessages({ batchId: batch?.id }, auth(other))).messages).toEqual(
      [],
    );
    expect((await messaging.listBatches({}, auth(other))).batches).toEqual([]);
    expect(
      await failure(messaging.listBatchMessages({ batchId: batch?.id ?? 0n }, auth(other))),
    ).toMatchObject({ code: Code.NotFound, reason: "BATCH_NOT_FOUND" });
    const listed = (await messaging.listMessages({}, auth(who))).messages.map((m) => m.id);
    expect(listed).toEqual(expect.arrayContaining(mine));
  });
});

describe("ListBatches and ListBatchMessages", () => {
  it("ListBatches: newest first, paged, progress left to GetBatch", async () => {
    const who = await service.createAccount();
    const ids: bigint[] = [];
    for (const name of ["one", "two", "three"]) {
      const { batch } = await messaging.sendBatch(
        { name, messages: [{ to: "+4915112345678", text: name }] },
        auth(who),
      );
      ids.push(batch?.id ?? 0n);
    }
    const first = await messaging.listBatches({ pageSize: 2 }, auth(who));
    const second = await messaging.listBatches(
      { pageSize: 2, pageToken: first.nextPageToken },
      auth(who),
    );
    expect([...first.batches, ...second.batches].map((b) => [b.id, b.name])).toEqual([
      [ids[2], "three"],
      [ids[1], "two"],
      [ids[0], "one"],
    ]);
    expect(second.nextPageToken).toBe("");
    expect(first.batches[0]?.progress).toBeUndefined();
    expect(first.batches[0]?.createTime).toBeDefined();
  });

  it("ListBatchMessages: a batch's accepted messages in submission order, page by page", async () => {
    const who = await service.createAccount({ credit: 500 });
    const { batch } = await messaging.sendBatch(
      {
        messages: Array.from({ length: 250 }, (_, i) => ({
          to: i === 3 ? "bad" : "+4915112345678",
          text: `#${i}`,
        })),
      },
      auth(who),
    );
    const { pages } = await allPages((pageToken) =>
      messaging.listBatchMessages(
        { batchId: batch?.id ?? 0n, pageSize: 100, pageToken },
        auth(who),
      ),
    );
    expect(pages.map((p) => p.length)).toEqual([100, 100, 49]);
    const texts = pages.flat().map((m) => m.text);
    expect(texts).toEqual(Array.from({ length: 250 }, (_, i) => `#${i}`).filter((t) => t !== "#3"));
    expect(pages.flat().every((m) => m.batchId === batch?.id)).toBe(true);
  });

  it("REST GET /sms-batch/{id} still answers every message inline, across several pages", async () => {
    const who = await service.createAccount({ credit: 2000 });
    const { batch } = await messaging.sendBatch(
      {
        messages: Array.from({ length: 1500 }, (_, i) => ({ to: "+4915112345678", text: `${i}` })),
      },
      auth(who),
    );
    const response = await fetch(
      `${service.baseUrl}/sms-batch/${batch?.id}?apiKey=${who.apiKey}&apiSecret=${who.apiSecret}`,
    );
    const body = (await response.json()) as { messages: { id: number }[]; acceptedCount: number };
    expect(response.status).toBe(200);
    expect(body.acceptedCount).toBe(1500);
    expect(body.messages).toHaveLength(1500);
    const ids = body.messages.map((m) => m.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });
});

describe("ListSenderNames", () => {
  it("pages the account's names oldest first; REST still lists them all", async () => {
    const who = await service.createAccount();
    for (const name of ["First", "Second", "Third"]) {
      await senderNames.createSenderName(
        {
          name,
          purpose: SenderNamePurpose.NOTIFICATION,
          ownerType: SenderNameOwnerType.COMPANY,
          owner: "Example Ltd",
          exampleMsg: "hello",
        },
        auth(who),
      );
    }
    const first = await senderNames.listSenderNames({ pageSize: 2 }, auth(who));
    const second = await senderNames.listSenderNames(
      { pageSize: 2, pageToken: first.nextPageToken },
      auth(who),
    );
    expect([...first.senderNames, ...second.senderNames].map((s) => s.name)).toEqual([
      "First",
      "Second",
      "Third",
    ]);
    expect(second.nextPageToken).toBe("");
    const other = await service.createAccount();
    expect((await senderNames.listSenderNames({}, auth(other))).senderNames).toEqual([]);
    const rest = await fetch(
      `${service.baseUrl}/sender_names?apiKey=${who.apiKey}&apiSecret=${who.apiSecret}`,
    );
    expect(((await rest.json()) as { sender_names: unknown[] }).sender_names).toHaveLength(3);
  });
});
