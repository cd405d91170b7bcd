/**
 * The toll-fraud guard (docs/design.md "Money", "Toll-fraud guard"): past `max` distinct numbers of
 * one range (all digits but the last `digits`) within the window, a message is flagged (monitor)
 * or refused (block: REST 400 `errors.to`, batch entries by index, Connect FAILED_PRECONDITION
 * SUSPECTED_TOLL_FRAUD), stores and charges nothing then, and is kept for the console.
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MessagingService } from "../../gen/sms/v1/messaging_pb.ts";
import { DEFAULT_RISK } from "../../src/domain/risk-settings.ts";
import { TollFraudGuard } from "../../src/money/toll-fraud-guard.ts";
import { accountCall, creditOf } from "../rest/helpers.ts";
import { carriersFile } from "../support/carriers-file.ts";
import { failure } from "../support/error-details.ts";
import { eventually } from "../support/fixtures.ts";
import { postJson, type RunningService, startService } from "../support/service.ts";

const settings = (mode: "monitor" | "block") => ({
  mode,
  prefixBurst: { max: 3, digits: 3, windowSeconds: 600 },
});

describe("the guard's count", () => {
  it("counts distinct numbers of one range within the window; a number seen again is not new", () => {
    let now = 0;
    const guard = new TollFraudGuard(settings("block"), () => now);
    const verdicts = ["+4915112345001", "+4915112345002", "+4915112345001", "+4915112345003"].map(
      (to) => guard.check("a", to),
    );
    expect(verdicts).toEqual(["ok", "ok", "ok", "ok"]);
    expect(guard.check("a", "+4915112345004")).toBe("refused");
    // Another range, and another account, count apart.
    expect(guard.check("a", "+4915112346004")).toBe("ok");
    expect(guard.check("b", "+4915112345004")).toBe("ok");
    // Once the window has passed, the range starts again.
    now = 601_000;
    expect(guard.check("a", "+4915112345004")).toBe("ok");
  });

  it("monitor flags what block would refuse; the operator's overrides win", () => {
    const guard = new TollFraudGuard(settings("monitor"));
    for (const n of [1, 2, 3]) expect(guard.check("a", `+49151123450${n}0`)).toBe("ok");
    expect(guard.check("a", "+4915112345040")).toBe("flagged");
    expect(guard.check("a", "+4915112345050", { mode: "block" })).toBe("refused");
    expect(guard.check("a", "+4915112345060", { mode: "off" })).toBe("ok");
    expect(guard.check("c", "+4915112345060", { max: 1 })).toBe("ok");
    expect(guard.check("c", "+4915112345070", { max: 1 })).toBe("flagged");
  });

  it("counts a batch's numbers as it counts single sends, ranges interleaved and in the window", () => {
    let now = 0;
    const numbers = [
      "+4915112345001",
      "+4915112346001",
      "+4915112345002",
      "+4915112345001",
      "+4915112345003",
      "+4915112346002",
      "+4915112345004",
      "+4915112345005",
    ];
    const single = new TollFraudGuard(settings("block"), () => now);
    const batch = new TollFraudGuard(settings("block"), () => now);
    const check = batch.checker("a");
    expect(numbers.map((to) => check?.(to))).toEqual(numbers.map((to) => single.check("a", to)));
    expect(numbers.map((to) => check?.(to))).toContain("refused");
    // A later batch, past the window, starts the ranges again; off, there is no batch check.
    now = 601_000;
    expect(batch.checker("a")?.("+4915112345005")).toBe("ok");
    expect(batch.checker("a", { mode: "off" })).toBeUndefined();
  });

  it("tells apart destinations whose last digits read as the same number", () => {
    const guard = new TollFraudGuard({
      mode: "block",
      prefixBurst: { max: 1, digits: 3, windowSeconds: 600 },
    });
    // Shorter than the digits counted: keyed as they are, "12" and "012" are two numbers.
    expect(guard.check("a", "12")).toBe("ok");
    expect(guard.check("a", "12")).toBe("ok");
    expect(guard.check("a", "012")).toBe("refused");
    expect(guard.check("a", "+4915112345012")).toBe("ok");
    expect(guard.check("a", "+4915112345012")).toBe("ok");
    expect(guard.check("a", "+4915112345112")).toBe("refused");
  });

  it("forgets ranges nobody sent to for a whole window, and their numbers", () => {
    let now = 1_700_000_000_000;
    const guard = new TollFraudGuard(settings("monitor"), () => now);
    const check = guard.checker("a");
    for (let n = 0; n < 5000; n++) check?.(`+49151${10_000_000 + n}`);
    expect(guard.tracked()).toEqual({ ranges: 5, destinations: 5000 });
    now += 300_000;
    guard.check("a", "+4915199999001");
    expect(guard.tracked().ranges).toBe(6);
    // A window after the burst: its ranges go, the one used since stays.
    now += 300_001;
    guard.check("a", "+4915199999002");
    expect(guard.tracked()).toEqual({ ranges: 1, destinations: 2 });
    expect(guard.check("a", "+4915110000001")).toBe("ok");
  });

  it("counts across the days an instance runs as within one", () => {
    let now = 0;
    const guard = new TollFraudGuard(settings("block"), () => now);
    now = 2 ** 29 - 1000;
    for (const n of [1, 2, 3]) expect(guard.check("a", `+491511234500${n}`)).toBe("ok");
    // Past the times' rebase, the numbers seen a second ago still count, and are still known.
    now += 2000;
    expect(guard.check("a", "+4915112345004")).toBe("refused");
    expect(guard.check("a", "+4915112345001")).toBe("ok");
    now += 600_000;
    expect(guard.check("a", "+4915112345004")).toBe("ok");
  });

  it("defaults to monitor, 20 numbers, 3 digits, 10 minutes", () => {
    expect(DEFAULT_RISK).toEqual({
      mode: "monitor",
      prefixBurst: { max: 20, digits: 3, windowSeconds: 600 },
    });
  });
});

function guardedService(mode: "monitor" | "block") {
  return startService(
    {
      SMS_RATE_LIMIT_RPS: "0",
      SMS_CARRIERS_FILE: carriersFile([
        "carriers:",
        "  - { name: sim, url: simulator }",
        "routes:",
        "  - { name: default, carriers: [sim] }",
        `risk: { mode: ${mode}, prefixBurst: { max: 3, digits: 3, windowSeconds: 600 } }`,
      ]),
    },
    undefined,
    { metrics: true },
  );
}

describe("block mode", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await guardedService("block");
  });
  afterAll(() => service?.close());

  it("refuses a burst past the limit on every door, storing and charging nothing", async () => {
    const account = await service.createAccount({ credit: 100 });
    for (const n of [1, 2, 3]) {
      const sent = await postJson(`${service.baseUrl}/sms`, {
        ...account,
        to: `+4915112345${n}00`.slice(0, 14),
        text: "code 1234",
      });
      expect(sent.status).toBe(200);
    }
    const refused = await postJson(`${service.baseUrl}/sms`, {
      ...account,
      to: "+4915112345999",
      text: "code 1234",
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors.to[0]).toContain("toll-fraud");
    expect(await creditOf(service, account.apiKey)).toBe(97);

    const batch = await postJson(`${service.baseUrl}/sms-batch`, {
      ...account,
      messages: [
        { to: "+4915112345998", text: "a" },
        { to: "+4915177777001", text: "b" },
      ],
    });
    expect(batch.status).toBe(200);
    expect(batch.body.errors.map((e: any) => e.index)).toEqual([0]);

    const messaging = createClient(
      MessagingService,
      createConnectTransport({ baseUrl: service.baseUrl, httpVersion: "1.1" }),
    );
    const rpc = await failure(
      messaging.sendMessage({ to: "+4915112345997", text: "c" }, accountCall(account)),
    );
    expect(rpc.reason).toBe("SUSPECTED_TOLL_FRAUD");
    expect(rpc.code).toBe(9);

    const metrics = await (await fetch(service.metricsUrl as string)).text();
    expect(metrics).toMatch(/sms_risk_flagged_total\{action="refused"\} 3/);
    await eventually(
      async () =>
        (await service.store.db
          .collection("risk_events")
          .countDocuments({ accountId: account.apiKey, action: "refused" })) === 3,
    );
  });
});

describe("monitor mode", () => {
  let service: RunningService;
  beforeAll(async () => {
    service = await guardedService("monitor");
  });
  afterAll(() => service?.close());

  it("accepts the burst, flags the messages past the limit and counts them", async () => {
    const account = await service.createAccount({ credit: 100 });
    const ids: number[] = [];
    for (const n of [1, 2, 3, 4, 5]) {
      const sent = await postJson(`${service.baseUrl}/sms`, {
        ...account,
        to: `+49151123450${n}0`,
        text: "code 1234",
      });
      expect(sent.status).toBe(200);
      ids.push(sent.body.id);
    }
    const stored = await service.store.messages
      .find({ _id: { $in: ids } }, { sort: { _id: 1 } })
      .toArray();
    expect(stored.map((m) => m.risk ?? null)).toEqual([
      null,
      null,
      null,
      "prefix_burst",
      "prefix_burst",
    ]);
    const metrics = await (await fetch(service.metricsUrl as string)).text();
    expect(metrics).toMatch(/sms_risk_flagged_total\{action="flagged"\} 2/);
  });
});
