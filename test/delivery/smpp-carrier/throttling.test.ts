/**
 * A bind against an SMSC that throttles (the test SMSC's maxTps, ESME_RTHROTTLED above it): one
 * burst over the SMSC's rate, its throttling answers all to parts already in flight, begins one
 * short pause rather than one doubling per answer; every throttled part is submitted again and
 * accepted, none failed, none accepted twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SmppCarrier } from "../../../src/delivery/smpp-carrier/adapter.ts";
import type { BindStatus } from "../../../src/smpp/bind.ts";
import { partsOf, smppCarrier, waitFor } from "../../support/smpp.ts";
import { startSmsc, type TestSmsc } from "../../support/smsc.ts";

const ESME_RTHROTTLED = 0x58;
let smsc: TestSmsc;
let carrier: SmppCarrier | undefined;

beforeAll(async () => {
  smsc = await startSmsc({ config: { dropReceipts: true, answerDelayMs: 0, maxTps: 10 } });
});

afterAll(async () => {
  await carrier?.stop();
  await smsc?.stop();
});

describe("a bind throttled by its SMSC", () => {
  it("pauses once for a burst of in-flight throttling answers, briefly, and submits them all again", async () => {
    // No TPS on our side and a window of 30: the 30 parts go out at once, before any answer; the
    // SMSC takes 10 in its second and throttles the other 20.
    carrier = smppCarrier(smsc, { binds: 1, window: 30 });
    await carrier.start(async () => ({}));
    await waitFor(() => carrier?.status().state === "bound");
    const parts = Array.from({ length: 30 }, (_, i) =>
      partsOf(["x"], { to: `+4915190${String(100_000 + i)}` }),
    ).flat();
    const results = await carrier.submit(parts);

    expect(results).toHaveLength(30);
    expect(results.every((r) => r.ok)).toBe(true);
    const answers = await smsc.pdus({ command: "submit_sm_resp" });
    const accepted = answers.filter((p) => p.status === 0);
    const throttled = answers.filter((p) => p.status === ESME_RTHROTTLED);
    expect(accepted).toHaveLength(30);
    expect(new Set(accepted.map((p) => p.message_id)).size).toBe(30);
    expect(throttled.length).toBeGreaterThanOrEqual(20);

    const [bind] = carrier.status().binds as BindStatus[];
    expect(bind?.throttled).toBe(throttled.length);
    // The first burst's 20 answers began one pause; each later round of resubmissions one more.
    // Before: a pause per answer, doubling from 100 ms to 5 s within the first burst.
    expect(bind?.throttlePauses).toBeGreaterThanOrEqual(1);
    expect(bind?.throttlePauses).toBeLessThanOrEqual(throttled.length - 19);
    expect(bind?.lastThrottlePauseMs).toBeGreaterThan(0);
    expect(bind?.lastThrottlePauseMs).toBeLessThanOrEqual(1_000);
  });
});
