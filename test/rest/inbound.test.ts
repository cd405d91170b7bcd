/**
 * Reading inbound messages (REST GET /inbound, GET /inbound/{id}; InboundService), the account's
 * inbound settings, and the operator's numbers (AdminService): docs/design.md "Two-way messaging".
 * Inbound messages are written as the intake stores them (store/inbound-messages.ts).
 */
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OptOutType } from "../../gen/sms/v1/types_pb.ts";
import {
  type InboundMessageDoc,
  inboundMessagesCollection,
} from "../../src/store/inbound-messages.ts";
import { failure } from "../support/error-details.ts";
import { nextTestId } from "../support/fixtures.ts";
import {
  adminHeaders,
  getJson,
  postJson,
  type RunningService,
  startService,
} from "../support/service.ts";
import { type Account, accountCall } from "./helpers.ts";
import { allPages, connectClients } from "./list-fixtures.ts";

let service: RunningService;
beforeAll(async () => {
  service = await startService();
});
afterAll(() => service?.close());

const auth = accountCall;
const inbound = () => connectClients(service).inbound;

async function storeInbound(
  accountId: string,
  fields: Partial<InboundMessageDoc> & { receivedAt: Date },
): Promise<InboundMessageDoc> {
  const doc: InboundMessageDoc = {
    _id: 1_000_000 + nextTestId(),
    accountId,
    from: "+4915112345678",
    to: "+4930111111",
    text: "hello",
    parts: 1,
    carrier: "simulator",
    ...fields,
  };
  await inboundMessagesCollection(service.store.db).insertOne(doc);
  return doc;
}

const query = (who: Account, extra: Record<string, string> = {}) =>
  new URLSearchParams({ ...who, ...extra }).toString();

describe("GET /inbound and GET /inbound/{id}", () => {
  it("lists the account's messages newest first in the design's shape, and filters", async () => {
    const account = await service.createAccount();
    const other = await service.createAccount();
    const t0 = Date.parse("2025-06-01T12:00:00Z");
    const older = await storeInbound(account.apiKey, { receivedAt: new Date(t0) });
    const stop = await storeInbound(account.apiKey, {
      receivedAt: new Date(t0 + 1000),
      text: "Stop",
      optOutType: "STOP",
      from: "+4915199999999",
    });
    const partial = await storeInbound(account.apiKey, {
      receivedAt: new Date(t0 + 2000),
      to: "12345",
      text: "part one",
      parts: 1,
      incomplete: true,
    });
    await storeInbound(other.apiKey, { receivedAt: new Date(t0 + 3000) });

    const all = await getJson(`${service.baseUrl}/inbound?${query(account)}`);
    expect(all.status).toBe(200);
    expect(all.body).toEqual({
      inbound: [
        {
          id: partial._id,
          from: "+4915112345678",
          to: "12345",
          text: "part one",
          parts: 1,
          receivedAt: "2025-06-01T12:00:02.000Z",
          incomplete: true,
        },
        {
          id: stop._id,
          from: "+4915199999999",
          to: "+4930111111",
          text: "Stop",
          parts: 1,
          receivedAt: "2025-06-01T12:00:01.000Z",
          optOutType: "STOP",
        },
        {
          id: older._id,
          from: "+4915112345678",
          to: "+4930111111",
          text: "hello",
          parts: 1,
          receivedAt: "2025-06-01T12:00:00.000Z",
        },
      ],
      nextPageToken: "",
    });
    const ids = async (extra: Record<string, string>) =>
      (await getJson(`${service.baseUrl}/inbound?${query(account, extra)}`)).body.inbound.map(
        (m: { id: number }) => m.id,
      );
    expect(await ids({ from: "+4915199999999" })).toEqual([stop._id]);
    expect(await ids({ to: "12345" })).toEqual([partial._id]);
    expect(await ids({ since: "2025-06-01T12:00:01Z" })).toEqual([partial._id, stop._id]);

    const one = await getJson(`${service.baseUrl}/inbound/${stop._id}?${query(account)}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(all.body.inbound[1]);
  });

  it("pages through InboundService, each message once", async () => {
    const account = await service.createAccount();
    const t0 = Date.now() - 60_000;
    const stored: number[] = [];
    for (let i = 0; i < 5; i++) {
      stored.push((await storeInbound(account.apiKey, { receivedAt: new Date(t0 + i) }))._id);
    }
    const seen = await allPages(
      (paging) => inbound().listInboundMessages(paging, auth(account)),
      (page) => page.inboundMessages.map((m) => Number(m.id)),
    );
    expect(seen).toEqual(stored.reverse());
    const read = await inbound().getInboundMessage({ id: BigInt(seen[0] ?? 0) }, auth(account));
    expect(read.inboundMessage?.optOutType).toBe(OptOutType.UNSPECIFIED);
  });

  it("another account's message, an unknown id, a bad id or a bad since are refused in the spec's shape", async () => {
    const account = await service.createAccount();
    const other = await service.createAccount();
    const theirs = await storeInbound(other.apiKey, { receivedAt: new Date() });
    const hidden = await getJson(`${service.baseUrl}/inbound/${theirs._id}?${query(account)}`);
    expect(hidden).toEqual({
      status: 404,
      body: { errors: { id: [`no inbound message with id ${theirs._id}`] } },
    });
    const rpc = await failure(inbound().getInboundMessage({ id: 999_999_999n }, auth(account)));
    expect([rpc.code, rpc.reason]).toEqual([Code.NotFound, "INBOUND_MESSAGE_NOT_FOUND"]);
    const bad = await getJson(`${service.baseUrl}/inbound/abc?${query(account)}`);
    expect(bad).toEqual({
      status: 400,
      body: { errors: { id: ["id must be a positive integer"] } },
    });
    const since = await getJson(`${service.baseUrl}/inbound?${query(account, { since: "June" })}`);
    expect(since).toEqual({
      status: 400,
      body: { errors: { since: ["since must be a date-time such as 2025-06-01T12:00:00Z"] } },
    });
    const anonymous = await getJson(`${service.baseUrl}/inbound`);
    expect(anonymous.status).toBe(400);
    expect(Object.keys(anonymous.body.errors).sort()).toEqual(["apiKey", "apiSecret"]);
    const wrong = await getJson(
      `${service.baseUrl}/inbound?${query({ apiKey: account.apiKey, apiSecret: "wrong" })}`,
    );
    expect(wrong.status).toBe(401);
    expect(Object.keys(wrong.body.errors)).toEqual(["request"]);
  });
});

describe("inbound settings", () => {
  it("answers the defaults naming the account, takes the account's own replies and URL", async () => {
    const account = await service.createAccount();
    const { settings } = await inbound().getInboundSettings({}, auth(account));
    expect(settings?.inboundUrl).toBe("");
    expect(settings?.stopReply).toMatch(/^test account: .*START/);
    expect(settings?.helpReply).toMatch(/STOP.*START/);
    const updated = await inbound().updateInboundSettings(
      { inboundUrl: "https://example.com/in", stopReply: "Bye from Shop. Text START to rejoin." },
      auth(account),
    );
    expect(updated.settings).toMatchObject({
      inboundUrl: "https://example.com/in",
      stopReply: "Bye from Shop. Text START to rejoin.",
      startReply: settings?.startReply,
    });
    // Empty restores the default; unset keeps.
    const restored = await inbound().updateInboundSettings({ stopReply: "" }, auth(account));
    expect(restored.settings?.stopReply).toBe(settings?.stopReply);
    expect(restored.settings?.inboundUrl).toBe("https://example.com/in");
  });

  it("refuses a bad URL, a reply longer than 2 parts and a reply that is itself a keyword", async () => {
    const account = await service.createAccount();
    const refused = await failure(
      inbound().updateInboundSettings(
        { inboundUrl: "ftp://x", helpReply: "x".repeat(307), startReply: "STOP" },
        auth(account),
      ),
    );
    expect(refused.code).toBe(Code.InvalidArgument);
    expect(Object.keys(refused.fields).sort()).toEqual([
      "help_reply",
      "inbound_url",
      "start_reply",
    ]);
    const { settings } = await inbound().getInboundSettings({}, auth(account));
    expect(settings?.inboundUrl).toBe("");
  });
});

describe("numbers (AdminService)", () => {
  it("assigns, lists and releases; one account per number; the account sends from it", async () => {
    const account = await service.createAccount();
    const other = await service.createAccount();
    const assigned = await service.admin.assignNumber(
      { apiKey: account.apiKey, number: "4930222222222" },
      adminHeaders,
    );
    expect(assigned.number).toMatchObject({ number: "+4930222222222", apiKey: account.apiKey });
    // Again to the same account: as it is.
    await service.admin.assignNumber(
      { apiKey: account.apiKey, number: "+4930222222222" },
      adminHeaders,
    );
    const short = await service.admin.assignNumber(
      { apiKey: account.apiKey, number: "7726" },
      adminHeaders,
    );
    expect(short.number?.number).toBe("7726");
    const taken = await failure(
      service.admin.assignNumber({ apiKey: other.apiKey, number: "+4930222222222" }, adminHeaders),
    );
    expect([taken.code, taken.reason]).toEqual([
      Code.FailedPrecondition,
      "NUMBER_ASSIGNED_ELSEWHERE",
    ]);
    const bad = await failure(
      service.admin.assignNumber({ apiKey: account.apiKey, number: "12" }, adminHeaders),
    );
    expect(Object.keys(bad.fields)).toEqual(["number"]);
    const unknown = await failure(
      service.admin.assignNumber({ apiKey: "nobody", number: "+4930333333333" }, adminHeaders),
    );
    expect(unknown.reason).toBe("ACCOUNT_NOT_FOUND");

    const listed = await service.admin.listNumbers({ apiKey: account.apiKey }, adminHeaders);
    expect(listed.numbers.map((n) => n.number)).toEqual(["+4930222222222", "7726"]);

    // Sending from an assigned number, written with or without +, needs no approval.
    for (const from of ["+4930222222222", "4930222222222", "7726"]) {
      const sent = await postJson(`${service.baseUrl}/sms`, {
        to: "+4915112345678",
        from,
        text: "hi",
        ...account,
      });
      expect(sent.status, from).toBe(200);
      expect(sent.body.from).toBe(from);
    }
    // An assigned number may be the default sender.
    const withDefault = await service.admin.setDefaultSender(
      { apiKey: account.apiKey, senderName: "7726" },
      adminHeaders,
    );
    expect(withDefault.account?.defaultSender).toBe("7726");
    const byDefault = await postJson(`${service.baseUrl}/sms`, {
      to: "+4915112345678",
      text: "hi",
      ...account,
    });
    expect(byDefault.body.from).toBe("7726");
    const notTheirs = await postJson(`${service.baseUrl}/sms`, {
      to: "+4915112345678",
      from: "+4930222222222",
      text: "hi",
      ...other,
    });
    expect(notTheirs.status).toBe(400);
    expect(Object.keys(notTheirs.body.errors)).toEqual(["from"]);

    const released = await service.admin.releaseNumber({ number: "4930222222222" }, adminHeaders);
    expect(released.number?.apiKey).toBe(account.apiKey);
    const again = await failure(
      service.admin.releaseNumber({ number: "+4930222222222" }, adminHeaders),
    );
    expect([again.code, again.reason]).toEqual([Code.NotFound, "NUMBER_NOT_FOUND"]);
  });

  it("sets and clears the inbound URL on the account", async () => {
    const account = await service.createAccount();
    const set = await service.admin.setInboundUrl(
      { apiKey: account.apiKey, inboundUrl: "https://example.com/mo" },
      adminHeaders,
    );
    expect(set.account?.inboundUrl).toBe("https://example.com/mo");
    const { settings } = await inbound().getInboundSettings({}, auth(account));
    expect(settings?.inboundUrl).toBe("https://example.com/mo");
    const cleared = await service.admin.setInboundUrl({ apiKey: account.apiKey }, adminHeaders);
    expect(cleared.account?.inboundUrl).toBe("");
    const bad = await failure(
      service.admin.setInboundUrl({ apiKey: account.apiKey, inboundUrl: "nope" }, adminHeaders),
    );
    expect(Object.keys(bad.fields)).toEqual(["inbound_url"]);
  });
});

describe("SimulateInbound (AdminService)", () => {
  it("stores a message for the number's account, each call a message of its own, and applies its word", async () => {
    const account = await service.createAccount();
    await service.admin.assignNumber(
      { apiKey: account.apiKey, number: "+4930777777" },
      adminHeaders,
    );
    const first = await service.admin.simulateInbound(
      { sender: "4915100000555", to: "+4930777777", text: "Stop" },
      adminHeaders,
    );
    expect(first.inboundMessage).toMatchObject({
      sender: "+4915100000555",
      to: "+4930777777",
      text: "Stop",
      parts: 1,
      optOutType: OptOutType.STOP,
    });
    const again = await service.admin.simulateInbound(
      { sender: "+4915100000555", to: "+4930777777", text: "Stop" },
      adminHeaders,
    );
    expect(again.inboundMessage?.id).not.toBe(first.inboundMessage?.id);
    const listed = await getJson(`${service.baseUrl}/inbound?${query(account)}`);
    expect(listed.body.inbound.map((m: { id: number }) => m.id)).toEqual([
      Number(again.inboundMessage?.id),
      Number(first.inboundMessage?.id),
    ]);
    const refused = await postJson(`${service.baseUrl}/sms`, {
      to: "+4915100000555",
      text: "hi",
      ...account,
    });
    expect(refused.status).toBe(400);
  });

  it("refuses a number nobody owns and a sender that is not a number", async () => {
    const unowned = await failure(
      service.admin.simulateInbound(
        { sender: "+4915100000556", to: "+4930999", text: "hi" },
        adminHeaders,
      ),
    );
    expect([unowned.code, unowned.reason]).toEqual([Code.NotFound, "NUMBER_NOT_FOUND"]);
    const bad = await failure(
      service.admin.simulateInbound({ sender: "Shop", to: "+4930777777", text: "" }, adminHeaders),
    );
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(Object.keys(bad.fields).sort()).toEqual(["sender", "text"]);
  });

  it("is refused unless the carrier is the simulator", async () => {
    const smpp = await startService({
      SMS_CARRIER: "smpp",
      SMS_SMPP_URL: "smpp://user:secret@127.0.0.1:1",
    });
    try {
      const refused = await failure(
        smpp.admin.simulateInbound(
          { sender: "+4915100000557", to: "+4930777777", text: "hi" },
          adminHeaders,
        ),
      );
      expect([refused.code, refused.reason]).toEqual([Code.FailedPrecondition, "SIMULATOR_ONLY"]);
    } finally {
      await smpp.close();
    }
  });
});
