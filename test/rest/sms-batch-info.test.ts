/**
 * GET /sms-batch/{id} over real HTTP: the batch's information with its counters as its messages
 * move, 404 for an unknown id or another account's batch, credentials as query parameters.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postJson, type RunningService, startService } from "../support/service.ts";
import { type Account, withQuery } from "./helpers.ts";

let service: RunningService;
let account: Account;
let url: string;
const TO = "+4915112345678";

beforeAll(async () => {
  service = await startService();
  account = await service.createAccount({ credit: 1_000_000 });
  url = `${service.baseUrl}/sms-batch`;
});
afterAll(() => service?.close());

const batch = (body: Record<string, unknown>, who: Account = account) =>
  postJson(url, { ...body, ...who });

const info = (id: number | string, who: Account = account) =>
  withQuery("GET", `${url}/${id}`, { ...who });

describe("GET /sms-batch/{id}", () => {
  it("answers the batch information: counters, accepted messages, isActive", async () => {
    const created = await batch({
      name: "info",
      messages: [
        { to: "+4915100000001", text: "a" },
        { to: "bad", text: "b" },
        { to: "+4915100000002", text: "c".repeat(200) },
        { to: "+4915100000003", text: "d" },
        { to: "+4915100000004", text: "e" },
      ],
    });
    const { status, body } = await info(created.body.id);
    expect(status).toBe(200);
    expect(body).toEqual({
      id: created.body.id,
      name: "info",
      totalCount: 5,
      acceptedCount: 4,
      rejectedCount: 1,
      sentCount: 0,
      deliveredCount: 0,
      undeliveredCount: 0,
      // Beyond the spec's fields: messages its account canceled (docs/design.md).
      canceledCount: 0,
      messages: ["+4915100000001", "+4915100000002", "+4915100000003", "+4915100000004"].map(
        (to) => ({
          id: expect.any(Number),
          from: "SMSINFO",
          to,
          status: "ACCEPTED",
        }),
      ),
      isActive: true,
    });

    // The counters follow the messages' statuses (set here as the delivery worker would).
    const ids: number[] = body.messages.map((m: { id: number }) => m.id);
    const setStatus = (
      id: number | undefined,
      status: "SENT" | "DELIVERED" | "DELIVERY_ERROR" | "SEND_ERROR",
    ) => service.store.messages.updateOne({ _id: id }, { $set: { status } });
    await setStatus(ids[0], "DELIVERED");
    await setStatus(ids[1], "SENT");
    await setStatus(ids[2], "DELIVERY_ERROR");
    const progress = await info(created.body.id);
    expect(progress.body).toMatchObject({
      sentCount: 3,
      deliveredCount: 1,
      undeliveredCount: 1,
      isActive: true,
    });
    expect(progress.body.messages.map((m: { status: string }) => m.status)).toEqual([
      "DELIVERED",
      "SENT",
      "DELIVERY_ERROR",
      "ACCEPTED",
    ]);
    await setStatus(ids[1], "DELIVERED");
    await setStatus(ids[3], "SEND_ERROR");
    const done = await info(created.body.id);
    expect(done.body).toMatchObject({
      sentCount: 3,
      deliveredCount: 2,
      undeliveredCount: 2,
      isActive: false,
    });
  });

  it("an unknown id and another account's batch are 404 on errors.id", async () => {
    const mine = await batch({ messages: [{ to: TO, text: "a" }] });
    const stranger = await service.createAccount();
    for (const [id, who] of [
      [999_999_999, account],
      [mine.body.id, stranger],
    ] as const) {
      const { status, body } = await info(id, who);
      expect(status).toBe(404);
      expect(body).toEqual({ errors: { id: [`no batch with id ${id}`] } });
    }
  });

  it.each(["abc", "0", "-1", "1.5", "12345678901234567"])(
    "a non-integer id %j is 400 on errors.id",
    async (id) => {
      const { status, body } = await info(id);
      expect(status).toBe(400);
      expect(body).toEqual({ errors: { id: ["id must be a positive integer"] } });
    },
  );

  it("credentials are query parameters: missing ones are 400, wrong ones 401 (arrays here)", async () => {
    const missing = await withQuery("GET", `${url}/1`, {});
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({
      errors: { apiKey: ["apiKey cannot be empty"], apiSecret: ["apiSecret cannot be empty"] },
    });
    const wrong = await info(1, { apiKey: account.apiKey, apiSecret: "wrong" });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({
      errors: { request: ["apiKey and apiSecret do not match an account"] },
    });
  });
});
