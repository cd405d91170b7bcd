/**
 * The service as `npm start` runs it with SMS_CARRIER=smpp: an MO the test SMSC sends to an
 * account's number is stored before its deliver_sm_resp, listed by GET /inbound, and a STOP from
 * a handset refuses the account's next send to it (the intake hands it to the opt-out rules).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { assignNumber } from "../../src/store/numbers.ts";
import { getJson, postJson, type RunningService, startService } from "../support/service.ts";
import { waitFor } from "../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../support/smsc.ts";

let smsc: TestSmsc;
let service: RunningService;

beforeAll(async () => {
  smsc = await startSmsc();
  service = await startService(
    {
      SMS_RUN_WORKERS: "true",
      SMS_CARRIER: "smpp",
      SMS_SMPP_URL: smsc.url,
      SMS_SMPP_BINDS: "2",
    },
    undefined,
    { metrics: true },
  );
  await waitFor(async () => (await smsc.binds()).length === 2, 10_000, "two binds");
}, 120_000);

afterAll(async () => {
  await service?.close();
  await smsc?.stop();
});

it("stores an MO for the number's account and honours a STOP before answering it", async () => {
  const account = await service.createAccount();
  await assignNumber(service.store.db, account.apiKey, "+4930111111");
  const hello = await smsc.mo("4915100000077", "4930111111", "Hallo zurück", { waitMs: 10_000 });
  expect(hello.status).toBe(0);
  const stop = await smsc.mo("4915100000077", "4930111111", "Stop", { waitMs: 10_000 });
  expect(stop.status).toBe(0);

  // Answered ESME_ROK: the STOP is on the list, so the next send to the handset is refused.
  const refused = await postJson(`${service.baseUrl}/sms`, {
    ...account,
    to: "+4915100000077",
    text: "one more offer",
  });
  expect(refused.status).toBe(400);
  expect(refused.body.errors.to).toHaveLength(1);

  const query = new URLSearchParams({ apiKey: account.apiKey, apiSecret: account.apiSecret });
  const listed = await getJson(`${service.baseUrl}/inbound?${query}`);
  expect(listed.status).toBe(200);
  expect(
    listed.body.inbound.map((m: { from: string; to: string; text: string }) => [
      m.from,
      m.to,
      m.text,
    ]),
  ).toEqual([
    ["+4915100000077", "+4930111111", "Stop"],
    ["+4915100000077", "+4930111111", "Hallo zurück"],
  ]);
  expect(listed.body.inbound[0].optOutType).toBe("STOP");
});

it("answers ESME_RX_R_APPN for a number no account owns, counted in the operator's /health", async () => {
  const result = await smsc.mo("4915100000078", "4930999000", "hello?", { waitMs: 10_000 });
  expect(result.status).toBe(0x66);
  const health = await getJson(service.operatorHealthUrl ?? "");
  expect(health.body.carrier.inbound).toMatchObject({ messages: 2, unowned: 1 });
  expect(health.body.carrier.mo).toMatchObject({ received: 3 });
});
