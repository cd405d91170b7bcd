/**
 * Opt-out lists through REST and Connect (docs/design.md "Two-way messaging": "Scope and effect",
 * "Managing"): a number on the account's list is refused before anything is stored or charged,
 * on every send path; the account manages its own entries and reads every change.
 */
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptOutAction, OptOutSource } from "../../gen/sms/v1/types_pb.ts";
import { testDatabase } from "../support/database.ts";
import { failure } from "../support/error-details.ts";
import {
  adminHeaders,
  getJson,
  postForm,
  postJson,
  type RunningService,
  startService,
} from "../support/service.ts";
import { type Account, accountCall, storedFor, withQuery } from "./helpers.ts";
import { allPages, connectClients } from "./list-fixtures.ts";

let service: RunningService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

const auth = accountCall;
const clients = () => connectClients(service);

const OPTED_OUT = "+4915100000001";

async function accountWithOptOut(): Promise<Account> {
  const account = await service.createAccount({ credit: 100 });
  const added = await postJson(`${service.baseUrl}/opt-outs`, { number: OPTED_OUT, ...account });
  expect(added.status).toBe(200);
  return account;
}

describe("sends to an opted-out number", () => {
  it("POST /sms: 400 errors.to, nothing stored or charged, in either form of the number", async () => {
    const account = await accountWithOptOut();
    for (const to of [OPTED_OUT, OPTED_OUT.slice(1)]) {
      const answer = await postJson(`${service.baseUrl}/sms`, { to, text: "hi", ...account });
      expect(answer.status).toBe(400);
      expect(Object.keys(answer.body.errors)).toEqual(["to"]);
      expect(answer.body.errors.to[0]).toMatch(/opted out/);
    }
    const form = await postForm(`${service.baseUrl}/sms`, {
      to: OPTED_OUT,
      text: "hi",
      ...account,
    });
    expect(form.status).toBe(400);
    expect(await storedFor(service, account.apiKey)).toEqual({
      messages: 0,
      batches: 0,
      credit: 100,
    });
    // Another number of the same account is sent as ever.
    const other = await postJson(`${service.baseUrl}/sms`, {
      to: "+4915100000002",
      text: "hi",
      ...account,
    });
    expect(other.status).toBe(200);
  });

  it("SendMessage: FAILED_PRECONDITION with ErrorInfo reason RECIPIENT_OPTED_OUT", async () => {
    const account = await accountWithOptOut();
    const refused = await failure(
      clients().messaging.sendMessage({ to: OPTED_OUT, text: "hi" }, auth(account)),
    );
    expect(refused.code).toBe(Code.FailedPrecondition);
    expect(refused.reason).toBe("RECIPIENT_OPTED_OUT");
    expect(Object.keys(refused.fields)).toEqual(["to"]);
    expect((await storedFor(service, account.apiKey)).messages).toBe(0);
  });

  it("a batch rejects the opted-out entries by index, with the invalid ones, and accepts the rest", async () => {
    const account = await accountWithOptOut();
    const answer = await postJson(`${service.baseUrl}/sms-batch`, {
      messages: [
        { to: "+4915100000003", text: "one" },
        { to: OPTED_OUT.slice(1), text: "two" },
        { to: "12", text: "three" },
        { to: OPTED_OUT, text: "four" },
        { to: "+4915100000004", text: "five" },
      ],
      ...account,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ totalCount: 5, acceptedCount: 2, rejectedCount: 3 });
    expect(answer.body.errors.map((e: { index: number }) => e.index)).toEqual([1, 2, 3]);
    expect(answer.body.errors[0].text).toMatch(/opted out/);
    expect(answer.body.errors[2].text).toMatch(/opted out/);
    expect(await storedFor(service, account.apiKey)).toMatchObject({ messages: 2, credit: 98 });

    const rpc = await clients().messaging.sendBatch(
      {
        messages: [
          { to: OPTED_OUT, text: "x" },
          { to: "1", text: "y" },
        ],
      },
      auth(account),
    );
    expect(rpc.errors.map((e) => [e.index, e.reason])).toEqual([
      [0, "RECIPIENT_OPTED_OUT"],
      [1, "FIELD_INVALID"],
    ]);
    expect(rpc.errors[0]?.fieldViolations.map((v) => v.field)).toEqual(["messages[0].to"]);
  });

  it("the opt-out is the account's only: another account sends to the number", async () => {
    await accountWithOptOut();
    const other = await service.createAccount();
    const answer = await postJson(`${service.baseUrl}/sms`, {
      to: OPTED_OUT,
      text: "hi",
      ...other,
    });
    expect(answer.status).toBe(200);
  });
});

describe("a list read once by an instance (empty, or without the number)", () => {
  it.each([
    ["empty", []],
    ["with other numbers", ["+4915100000077"]],
  ])(
    "%s: a number listed on another instance is refused by the next send, nothing stored or charged",
    async (_, others: string[]) => {
      const database = await testDatabase();
      const [first, second] = [await startService({}, database), await startService({}, database)];
      try {
        const account = await first.createAccount({ credit: 100 });
        for (const number of others) {
          const added = await postJson(`${first.baseUrl}/opt-outs`, { number, ...account });
          expect(added.status).toBe(200);
        }
        const send = (to: string) =>
          postJson(`${first.baseUrl}/sms`, { to, text: "hi", ...account });
        expect((await send(OPTED_OUT)).status).toBe(200);
        // Time for the first instance to probe the list (it then reads nothing for this number).
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect((await send(OPTED_OUT)).status).toBe(200);
        const added = await postJson(`${second.baseUrl}/opt-outs`, {
          number: OPTED_OUT,
          ...account,
        });
        expect(added.status).toBe(200);
        // (The two messages accepted before are withdrawn and refunded by the opt-out.)
        const before = await storedFor(first, account.apiKey);
        const refused = await send(OPTED_OUT);
        expect(refused.status).toBe(400);
        expect(refused.body.errors.to[0]).toMatch(/opted out/);
        expect((await storedFor(first, account.apiKey)).messages).toBe(before.messages);
        expect((await storedFor(first, account.apiKey)).credit).toBe(before.credit);
        // Taken off the list on the second instance: the first sends again.
        const removed = await withQuery(
          "DELETE",
          `${second.baseUrl}/opt-outs/${encodeURIComponent(OPTED_OUT)}`,
          account,
        );
        expect(removed.status).toBe(200);
        expect((await send(OPTED_OUT)).status).toBe(200);
      } finally {
        await first.close();
        await second.close();
        await database.close();
      }
    },
  );
});

describe("managing the list", () => {
  it("POST, GET, DELETE /opt-outs and the history of changes", async () => {
    const account = await service.createAccount();
    const base = `${service.baseUrl}/opt-outs`;
    const first = await postJson(base, { number: "4915100000010", ...account });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ number: "+4915100000010", source: "API" });
    expect(Date.parse(first.body.createTime)).not.toBeNaN();
    // Sent again: answered as it is.
    const again = await postForm(base, { number: "+4915100000010", ...account });
    expect(again.body).toEqual(first.body);

    const listed = await withQuery("GET", base, account);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ optOuts: [first.body], nextPageToken: "" });

    const removed = await withQuery(
      "DELETE",
      `${base}/${encodeURIComponent("+4915100000010")}`,
      account,
    );
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual(first.body);
    const gone = await withQuery("DELETE", `${base}/4915100000010`, account);
    expect(gone.status).toBe(404);
    expect(gone.body.errors.number[0]).toMatch(/not on the opt-out list/);

    const changes = await withQuery("GET", `${base}/changes`, account);
    expect(changes.status).toBe(200);
    expect(
      changes.body.changes.map((c: { action: string; source: string; number: string }) => [
        c.action,
        c.source,
        c.number,
      ]),
    ).toEqual([
      ["REMOVED", "API", "+4915100000010"],
      ["ADDED", "API", "+4915100000010"],
    ]);
  });

  it("refuses what is not a phone number, on every door", async () => {
    const account = await service.createAccount();
    const bad = await postJson(`${service.baseUrl}/opt-outs`, { number: "12ab", ...account });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.body.errors)).toEqual(["number"]);
    const empty = await postJson(`${service.baseUrl}/opt-outs`, { number: "", ...account });
    expect(empty.status).toBe(400);
    const refused = await failure(clients().optOuts.getOptOut({ number: "0" }, auth(account)));
    expect(refused.code).toBe(Code.InvalidArgument);
    expect(Object.keys(refused.fields)).toEqual(["number"]);
    const history = await getJson(
      `${service.baseUrl}/opt-outs/changes?${new URLSearchParams({ ...account, number: "x" })}`,
    );
    expect(history.status).toBe(400);
  });

  it("the operator's entries are not the account's to remove (409), the operator's own are", async () => {
    const account = await service.createAccount();
    const number = "+4915100000020";
    const added = await service.admin.createOptOut(
      { apiKey: account.apiKey, number },
      adminHeaders,
    );
    expect(added.optOut?.source).toBe(OptOutSource.OPERATOR);
    const refused = await withQuery(
      "DELETE",
      `${service.baseUrl}/opt-outs/${encodeURIComponent(number)}`,
      account,
    );
    expect(refused.status).toBe(409);
    expect(Object.keys(refused.body.errors)).toEqual(["number"]);
    const rpc = await failure(clients().optOuts.deleteOptOut({ number }, auth(account)));
    expect([rpc.code, rpc.reason]).toEqual([Code.FailedPrecondition, "OPT_OUT_NOT_REMOVABLE"]);
    await service.admin.deleteOptOut({ apiKey: account.apiKey, number }, adminHeaders);
    const read = await failure(clients().optOuts.getOptOut({ number }, auth(account)));
    expect([read.code, read.reason]).toEqual([Code.NotFound, "OPT_OUT_NOT_FOUND"]);
    const { changes } = await clients().optOuts.listOptOutChanges({ number }, auth(account));
    expect(changes.map((c) => [c.action, c.source])).toEqual([
      [OptOutAction.REMOVED, OptOutSource.OPERATOR],
      [OptOutAction.ADDED, OptOutSource.OPERATOR],
    ]);
  });

  it("pages the list newest first, each number once", async () => {
    const account = await service.createAccount();
    const numbers = Array.from({ length: 5 }, (_, i) => `+49151000001${i}0`);
    for (const number of numbers) {
      await clients().optOuts.createOptOut({ number }, auth(account));
    }
    const seen = await allPages(
      (paging) => clients().optOuts.listOptOuts(paging, auth(account)),
      (page) => page.optOuts.map((o) => o.number),
    );
    expect(seen).toEqual([...numbers].reverse());
    const other = await service.createAccount();
    const stranger = await failure(
      clients().optOuts.listOptOuts({ pageToken: "bm90IGEgdG9rZW4" }, auth(other)),
    );
    expect(stranger.reason).toBe("PAGE_TOKEN_INVALID");
  });
});
